"""Arrow IPC interop between conduit (apache-arrow in Deno) and pyarrow.

Usage:
  arrow_interop.py check PATH          read a conduit-written stream, verify the shared table
  arrow_interop.py check-batches PATH N
                                        read a conduit batch-mode stream of N batches, verify
  arrow_interop.py write PATH          write the shared table as an IPC stream for conduit

The shared table (see EXPECTED) exercises nulls, dictionary-encoded strings, timestamps
(milliseconds, and microseconds with a time zone), int64 beyond 2^53 and nested lists.
Prints "ok" and exits 0 on success; any mismatch raises (exit 1).
"""

import sys

import pyarrow as pa

BIG = 2**62 + 7

EXPECTED = {
    "id": [1, 2, 3, None],
    "big": [BIG, -BIG, 0, None],
    "tag": ["alpha", "beta", None, "alpha"],
    "at_ms": [0, 1_700_000_000_123, None, -1],
    "at_us_utc": [1_700_000_000_123_456, None, 0, 42],
    "nested": [[[1, 2], [3]], None, [[], None, [4]], []],
    "score": [0.5, None, float("inf"), -0.0],
}


def shared_table() -> pa.Table:
    return pa.table(
        {
            "id": pa.array(EXPECTED["id"], pa.int32()),
            "big": pa.array(EXPECTED["big"], pa.int64()),
            "tag": pa.array(EXPECTED["tag"], pa.string()).dictionary_encode(),
            "at_ms": pa.array(EXPECTED["at_ms"], pa.timestamp("ms")),
            "at_us_utc": pa.array(EXPECTED["at_us_utc"], pa.timestamp("us", tz="UTC")),
            "nested": pa.array(EXPECTED["nested"], pa.list_(pa.list_(pa.int32()))),
            "score": pa.array(EXPECTED["score"], pa.float64()),
        }
    )


def check_table(table: pa.Table) -> None:
    expected_types = {
        "id": pa.int32(),
        "big": pa.int64(),
        "tag": pa.dictionary(pa.int32(), pa.string()),
        "at_ms": pa.timestamp("ms"),
        "at_us_utc": pa.timestamp("us", tz="UTC"),
        "nested": pa.list_(pa.list_(pa.int32())),
        "score": pa.float64(),
    }
    names = table.schema.names
    if names != list(EXPECTED):
        raise AssertionError(f"columns {names} != {list(EXPECTED)}")
    for name, expected_type in expected_types.items():
        actual = table.schema.field(name).type
        # conduit's list children are named differently ("" vs "item"); compare structure.
        if name == "nested":
            same = pa.types.is_list(actual) and pa.types.is_list(actual.value_type) and (
                actual.value_type.value_type == pa.int32()
            )
        else:
            same = actual == expected_type
        if not same:
            raise AssertionError(f"column {name}: type {actual} != {expected_type}")
    for name, values in EXPECTED.items():
        column = table.column(name)
        if pa.types.is_timestamp(column.type):
            column = column.cast(pa.int64())
        actual = column.to_pylist()
        if repr(actual) != repr(values):
            raise AssertionError(f"column {name}: {actual!r} != {values!r}")
    if table.column("tag").null_count != 1 or table.column("id").null_count != 1:
        raise AssertionError("null counts differ")


def read_stream(path: str) -> pa.Table:
    with pa.OSFile(path, "rb") as source:
        return pa.ipc.open_stream(source).read_all()


def main(argv: list) -> None:
    if len(argv) >= 3 and argv[1] == "check":
        check_table(read_stream(argv[2]))
    elif len(argv) >= 4 and argv[1] == "check-batches":
        with pa.OSFile(argv[2], "rb") as source:
            reader = pa.ipc.open_stream(source)
            batches = list(reader)
        if len(batches) != int(argv[3]):
            raise AssertionError(f"{len(batches)} batches != {argv[3]}")
        for i, batch in enumerate(batches):
            got = batch.to_pydict()
            want = {"seq": [i * 2, i * 2 + 1], "word": [f"w{i}", None]}
            if got != want:
                raise AssertionError(f"batch {i}: {got!r} != {want!r}")
    elif len(argv) >= 3 and argv[1] == "write":
        table = shared_table()
        with pa.OSFile(argv[2], "wb") as sink:
            with pa.ipc.new_stream(sink, table.schema) as writer:
                # Two batches, so conduit reads a dictionary shared across batches.
                for batch in table.to_batches(max_chunksize=2):
                    writer.write_batch(batch)
    else:
        raise SystemExit(__doc__)
    print("ok")


if __name__ == "__main__":
    main(sys.argv)
