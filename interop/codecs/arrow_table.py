"""The Python side of interop/codecs_arrow_test.ts: Arrow IPC streams pyarrow writes for
conduit to read, and a check that conduit's re-encoding of each is the same table.

    python3 arrow_table.py write DIR   # DIR/NAME.arrows per case; prints {name: refused type}
    python3 arrow_table.py check DIR   # compares DIR/NAME.*.conduit.arrows with case NAME;
                                       # prints "ok N" for N streams checked
"""

from __future__ import annotations

import datetime
import decimal
import glob
import json
import os
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.ipc as ipc

UTC = datetime.timezone.utc


def table(**columns) -> pa.Table:
    return pa.table(columns)


def dictionary_with_delta() -> list:
    """Two batches whose dictionary grows: pyarrow writes a delta dictionary batch."""
    first = pa.array(["a", "b", "a"]).dictionary_encode()
    second = pa.DictionaryArray.from_arrays(pa.array([0, 2, 1]), pa.array(["a", "b", "c"]))
    schema = pa.schema([("d", first.type)])
    return [pa.record_batch([first], schema=schema), pa.record_batch([second], schema=schema)]


CASES = {
    "null": table(n=pa.nulls(3)),
    "bool": table(b=pa.array([True, None, False])),
    "int8": table(v=pa.array([-128, 127, None], pa.int8())),
    "int16": table(v=pa.array([-32768, 32767, None], pa.int16())),
    "int32": table(v=pa.array([-(2**31), 2**31 - 1, None], pa.int32())),
    "int64": table(v=pa.array([-(2**63), 2**63 - 1, 2**53 + 1, None], pa.int64())),
    "uint8": table(v=pa.array([0, 255], pa.uint8())),
    "uint16": table(v=pa.array([0, 65535], pa.uint16())),
    "uint32": table(v=pa.array([0, 2**32 - 1], pa.uint32())),
    "uint64": table(v=pa.array([0, 2**64 - 1, None], pa.uint64())),
    "float16": table(v=pa.array([1.5, None], pa.float16())),
    "float32": table(v=pa.array([1.5, float("-inf"), None], pa.float32())),
    "float64": table(v=pa.array([5e-324, float("nan"), None], pa.float64())),
    "utf8": table(v=pa.array(["héllo 𝄞", "", None])),
    "large_utf8": table(v=pa.array(["a", None], pa.large_string())),
    "binary": table(v=pa.array([b"\x00\xff", None], pa.binary())),
    "large_binary": table(v=pa.array([b"x", None], pa.large_binary())),
    "fixed_size_binary": table(v=pa.array([b"ab", b"cd", None], pa.binary(2))),
    "string_view": table(v=pa.array(["short", "a string longer than twelve bytes", None], pa.string_view())),
    "binary_view": table(v=pa.array([b"s", b"a binary longer than twelve", None], pa.binary_view())),
    "date32": table(v=pa.array([datetime.date(1970, 1, 2), None], pa.date32())),
    "date64": table(v=pa.array([datetime.date(2024, 5, 6), None], pa.date64())),
    "time32": table(v=pa.array([1, None], pa.time32("ms"))),
    "time64": table(v=pa.array([1, None], pa.time64("ns"))),
    "timestamp s": table(v=pa.array([0, -1, None], pa.timestamp("s"))),
    "timestamp ms utc": table(v=pa.array([1_700_000_000_123, None], pa.timestamp("ms", tz="UTC"))),
    "timestamp us": table(v=pa.array([1_700_000_000_123_456, None], pa.timestamp("us", tz="Europe/Paris"))),
    "timestamp ns": table(v=pa.array([2**62, -(2**62), None], pa.timestamp("ns"))),
    "duration": table(v=pa.array([1, -1, None], pa.duration("us"))),
    "interval month_day_nano": table(v=pa.array([pa.MonthDayNano([1, 2, 3]), None], pa.month_day_nano_interval())),
    "decimal128": table(v=pa.array([decimal.Decimal("-12345678901234567890.12"), None], pa.decimal128(38, 2))),
    "decimal256": table(v=pa.array([decimal.Decimal("1" * 60), None], pa.decimal256(70, 0))),
    "list": table(v=pa.array([[1, 2], None, []], pa.list_(pa.int32()))),
    "large_list": table(v=pa.array([[1], None], pa.large_list(pa.int64()))),
    "fixed_size_list": table(v=pa.array([[1, 2], None], pa.list_(pa.int16(), 2))),
    "struct": table(v=pa.array([{"a": 1, "b": "x"}, None], pa.struct([("a", pa.int32()), ("b", pa.string())]))),
    "map": table(v=pa.array([[("k", 1)], None], pa.map_(pa.string(), pa.int32()))),
    "dense union": table(v=pa.UnionArray.from_dense(pa.array([0, 1], pa.int8()), pa.array([0, 0], pa.int32()), [pa.array([1]), pa.array(["x"])])),
    "sparse union": table(v=pa.UnionArray.from_sparse(pa.array([0, 1], pa.int8()), [pa.array([1, 2]), pa.array(["x", "y"])])),
    "dictionary": table(v=pa.array(["a", "b", None, "a"]).dictionary_encode()),
    "dictionary delta": dictionary_with_delta(),
    "nested list of struct": table(v=pa.array([[{"x": [1, None]}], None], pa.list_(pa.struct([("x", pa.list_(pa.int8()))])))),
    "lz4": table(n=pa.array(range(1000), pa.int64()), s=pa.array([f"v{i % 7}" for i in range(1000)])),
    "zstd": table(n=pa.array(range(1000), pa.int64()), s=pa.array([f"v{i % 7}" for i in range(1000)])),
    "zstd dictionary": table(v=pa.array([f"w{i % 3}" for i in range(500)]).dictionary_encode()),
    "list_view": table(v=pa.array([[1, 2], None, [3]], pa.list_view(pa.int32()))),
    "large_list_view": table(v=pa.array([[1], None], pa.large_list_view(pa.int32()))),
    "run_end_encoded": table(v=pa.RunEndEncodedArray.from_arrays(pa.array([2, 5], pa.int32()), pa.array(["x", "y"]))),
}
COMPRESSION = {"lz4": "lz4", "zstd": "zstd", "zstd dictionary": "zstd"}
# The types apache-arrow (so conduit) cannot represent: conduit must refuse them by name.
REFUSED = {"list_view": "ListView", "large_list_view": "LargeListView", "run_end_encoded": "RunEndEncoded"}


def batches_of(case) -> list:
    return case if isinstance(case, list) else case.to_batches()


def file_name(name: str) -> str:
    return name.replace(" ", "_")


def write(directory: str) -> None:
    for name, case in CASES.items():
        batches = batches_of(case)
        options = ipc.IpcWriteOptions(compression=COMPRESSION.get(name), emit_dictionary_deltas=True)
        sink = pa.BufferOutputStream()
        with ipc.new_stream(sink, batches[0].schema, options=options) as writer:
            for batch in batches:
                writer.write_batch(batch)
        with open(os.path.join(directory, file_name(name) + ".arrows"), "wb") as out:
            out.write(sink.getvalue().to_pybytes())
    print(json.dumps({name: REFUSED.get(name) for name in CASES}))


def check(directory: str) -> tuple:
    problems = []
    by_file = {file_name(name): name for name in CASES}
    paths = sorted(glob.glob(os.path.join(directory, "*.conduit.arrows")))
    for path in paths:
        base, variant = os.path.basename(path)[: -len(".conduit.arrows")].rsplit(".", 1)
        name = by_file[base]
        expected = pa.Table.from_batches(batches_of(CASES[name]))
        try:
            with open(path, "rb") as src:
                reader = ipc.open_stream(src.read())
                got = reader.read_all()
        except Exception as err:  # noqa: BLE001 - any failure is the verdict
            problems.append(f"{name} ({variant}): pyarrow cannot read conduit's stream: {err}")
            continue
        if not same_table(got, expected):
            problems.append(f"{name} ({variant}): {got} differs from {expected}")
    return problems, len(paths)


def same_table(got: pa.Table, expected: pa.Table) -> bool:
    """Same schema and the same values, column by column: a dictionary column may come back
    with its dictionary laid out anew (a delta merged), and NaN equals NaN."""
    if not got.schema.equals(expected.schema):
        return False
    for a, b in zip(got.columns, expected.columns):
        a, b = a.combine_chunks(), b.combine_chunks()
        if pa.types.is_dictionary(a.type):
            a, b = a.dictionary_decode(), b.dictionary_decode()
        if a.equals(b):
            continue
        if pa.types.is_floating(a.type):
            a, b = a.cast(pa.float64()), b.cast(pa.float64())
            same_nulls = a.is_null().equals(b.is_null())
            values = pc.or_kleene(pc.equal(a, b), pc.and_(pc.is_nan(a), pc.is_nan(b)))
            if not same_nulls or not pc.all(pc.fill_null(values, True)).as_py():
                return False
        else:
            return False
    return True


def main(argv: list) -> int:
    if len(argv) == 3 and argv[1] == "write":
        write(argv[2])
        return 0
    if len(argv) == 3 and argv[1] == "check":
        problems, checked = check(argv[2])
        for problem in problems:
            print(problem, file=sys.stderr)
        print(f"ok {checked}" if not problems else f"{len(problems)} of {checked} streams differ")
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
