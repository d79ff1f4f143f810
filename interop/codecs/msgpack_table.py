"""The Python side of interop/codecs_msgpack_test.ts: MessagePack values made by Python's
`msgpack` package for conduit to read, and a check of the values conduit wrote.

    python3 msgpack_table.py write            # prints {case name: hex of the bytes Python packed}
    python3 msgpack_table.py check IN.json    # IN: {case name: hex conduit wrote}; prints "ok"

Most cases are what a plain `msgpack.packb` peer sends; the "ext:" cases use conduit_msgpack
(interop/python), which adds conduit's extension types.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import sys

import msgpack

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
import conduit_msgpack  # noqa: E402

UTC = datetime.timezone.utc


def packb(value, **options):
    return msgpack.packb(value, use_bin_type=True, **options)


def nested(depth):
    value = 0
    for _ in range(depth):
        value = [value]
    return value


WRITTEN = {
    "nil": packb(None),
    "true": packb(True),
    "false": packb(False),
    "int 0": packb(0),
    "int 127": packb(127),
    "int 128": packb(128),
    "int 255": packb(255),
    "int 256": packb(256),
    "int 65535": packb(65535),
    "int 65536": packb(65536),
    "int 2^32-1": packb(2**32 - 1),
    "int 2^32": packb(2**32),
    "int -1": packb(-1),
    "int -32": packb(-32),
    "int -33": packb(-33),
    "int -128": packb(-128),
    "int -129": packb(-129),
    "int -2^31": packb(-(2**31)),
    "int -2^31-1": packb(-(2**31) - 1),
    "int 2^53-1": packb(2**53 - 1),
    "int 2^53": packb(2**53),
    "int 2^53+1": packb(2**53 + 1),
    "int 2^63-1": packb(2**63 - 1),
    "int 2^64-1": packb(2**64 - 1),
    "int -(2^53-1)": packb(-(2**53 - 1)),
    "int -2^53": packb(-(2**53)),
    "int -2^53-1": packb(-(2**53) - 1),
    "int -2^63": packb(-(2**63)),
    "float 0.1": packb(0.1),
    "float32 1.5": packb(1.5, use_single_float=True),
    "float nan": packb(math.nan),
    "float -inf": packb(-math.inf),
    "str": packb("héllo 𝄞"),
    "str empty": packb(""),
    "str 300 bytes": packb("é" * 150),
    "bin": packb(b"\x00\xff"),
    "array": packb([1, "a", None]),
    "map str keys": packb({"a": 1, "b": [2]}),
    "map int keys": packb({1: "one", 2: "two"}),
    "map mixed keys": packb({"a": 1, 2: "b"}),
    "map tuple key": packb({(1, 2): "t"}),
    "map bytes key": packb({b"k": 1}),
    "map bool and nil keys": packb({True: 1, None: 2}),
    "map float key": packb({1.5: "x"}),
    # Bytes packed as str (the old raw type) carry whatever bytes: not UTF-8 here.
    "str invalid UTF-8": msgpack.packb(b"a\xffb", use_bin_type=False),
    "str overlong UTF-8": msgpack.packb(b"\xc0\xaf", use_bin_type=False),
    "str encoded surrogate": msgpack.packb(b"\xed\xa0\x80", use_bin_type=False),
    "str invalid UTF-8, 300 bytes": msgpack.packb(b"a" * 299 + b"\xff", use_bin_type=False),
    "map key invalid UTF-8": msgpack.packb({b"\xc3\x28": 1}, use_bin_type=False),
    "timestamp 0": packb(msgpack.Timestamp(0, 0)),
    "timestamp ms": packb(msgpack.Timestamp(1_700_000_000, 123_000_000)),
    "timestamp before 1970": packb(msgpack.Timestamp(-1, 500_000_000)),
    "timestamp Date max": packb(msgpack.Timestamp(8_640_000_000_000, 0)),
    "timestamp Date min": packb(msgpack.Timestamp(-8_640_000_000_000, 0)),
    "timestamp past Date max": packb(msgpack.Timestamp(8_640_000_000_001, 0)),
    "timestamp before Date min": packb(msgpack.Timestamp(-8_640_000_000_001, 0)),
    "timestamp ns": packb(msgpack.Timestamp(1_700_000_000, 123_456_789)),
    "datetime ms": packb(datetime.datetime(2024, 5, 6, 7, 8, 9, 10_000, tzinfo=UTC), datetime=True),
    "datetime us": packb(datetime.datetime(2024, 5, 6, 7, 8, 9, 10_001, tzinfo=UTC), datetime=True),
    "ext 5": packb(msgpack.ExtType(5, b"xy")),
    "nested 50": packb(nested(50)),
    "ext: int 2^70": conduit_msgpack.packb(2**70),
    "ext: int -2^64": conduit_msgpack.packb(-(2**64)),
    "ext: set": conduit_msgpack.packb({1, 2, 3}),
    "ext: frozenset in list": conduit_msgpack.packb([frozenset(["x"])]),
}


def dt(*args, **kwargs):
    return datetime.datetime(*args, tzinfo=UTC, **kwargs)


class Fails:
    """A case Python cannot take: unpacking must raise."""

    def __init__(self, why: str) -> None:
        self.why = why


EXPECTED = {
    "null": None,
    "true": True,
    "zero": 0,
    "safe max": 2**53 - 1,
    "int -2^31": -(2**31),
    "float": 0.5,
    "str": "héllo 𝄞",
    "str empty": "",
    "bytes": b"\x00\xff",
    "array": [1, "a", None],
    "object": {"a": 1, "b": {"c": [True]}},
    "__proto__ key": {"__proto__": 1},
    "Map": {1: "one", "k": [2]},
    "Map with array key": {(1, 2): "t"},
    "Set": {1, "a"},
    "bigint 5": 5,
    "bigint 2^64": 2**64,
    "bigint -2^70": -(2**70),
    "bigint 2^53+1": 2**53 + 1,
    "bigint -2^63": -(2**63),
    "bigint as int 5": 5,
    "bigint as int 2^63": 2**63,
    "Date 0": dt(1970, 1, 1),
    "Date before 1970": dt(1969, 12, 31, 23, 59, 59, 500_000),
    "Date ms": dt(2023, 11, 14, 22, 13, 20, 123_000),
    "Date 9999": dt(9999, 12, 31, 23, 59, 59, 999_000),
    "Date max": Fails("past datetime.max: Python's datetime cannot hold it"),
    "ExtData 5": msgpack.ExtType(5, b"\x01"),
    "nested Map in object": {"m": {"k": {5}}},
}


def same(a, b) -> bool:
    """Equal in value and in type, all the way down (True is not 1, 1.0 is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return len(a) == len(b) and all(k in b and same(v, b[k]) for k, v in a.items()) and all(
            any(same(k, j) for j in b) for k in a
        )
    if isinstance(a, (set, frozenset)):
        return a == b and all(any(same(x, y) for y in b) for x in a)
    return a == b


def check(written: dict) -> list:
    problems = []
    if set(written) != set(EXPECTED):
        problems.append(f"cases differ: {sorted(set(written) ^ set(EXPECTED))}")
    for name, expected in EXPECTED.items():
        if name not in written:
            continue
        data = bytes.fromhex(written[name])
        try:
            value = conduit_msgpack.unpackb(data)
        except Exception as err:  # noqa: BLE001 - any failure is the verdict
            if not isinstance(expected, Fails):
                problems.append(f"{name}: raised {type(err).__name__}: {err}")
            continue
        if isinstance(expected, Fails):
            problems.append(f"{name}: should fail ({expected.why}), gave {value!r}")
        elif not same(value, expected):
            problems.append(f"{name}: got {value!r}, expected {expected!r}")
    return problems


def main(argv: list) -> int:
    if len(argv) == 2 and argv[1] == "write":
        print(json.dumps({name: data.hex() for name, data in WRITTEN.items()}))
        return 0
    if len(argv) == 3 and argv[1] == "check":
        with open(argv[2], encoding="utf-8") as src:
            problems = check(json.load(src))
        for problem in problems:
            print(problem, file=sys.stderr)
        print("ok" if not problems else f"{len(problems)} of {len(EXPECTED)} cases differ")
        return 1 if problems else 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
