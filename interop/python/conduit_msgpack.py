"""MessagePack with conduit's extension types, on the `msgpack` package.

docs/protocol.md ("MessagePack extension types") is the spec; this module is its Python side:

| conduit (JavaScript)  | wire                                        | Python               |
| --------------------- | ------------------------------------------- | -------------------- |
| `Map`                 | ext 1: a MessagePack array [k0, v0, k1, ...]  | `dict`               |
| `Set`                 | ext 2: a MessagePack array of the members   | `set` (packs `frozenset` too) |
| `bigint`              | ext 0x42: big-endian two's complement       | `int`                |
| `Date`                | ext -1: the standard timestamp              | `datetime` (UTC)     |

Python ints that fit 64 bits pack as plain ints (conduit reads a number, or a bigint outside
2^53); larger ones as ext 0x42. A dict packs as a plain map: conduit reads one with string
keys as an object and one with any other key as a `Map`. List keys inside a Map or Set payload
come back as tuples, since a Python dict key or set member must be hashable. conduit refuses a
timestamp finer than a millisecond unless it decodes with `subMillisecond: "truncate"`.
"""

from __future__ import annotations

import datetime
from typing import Any

import msgpack

EXT_MAP = 1
EXT_SET = 2
EXT_BIGINT = 0x42

__all__ = ["EXT_BIGINT", "EXT_MAP", "EXT_SET", "packb", "unpackb"]


def packb(value: Any, **options: Any) -> bytes:
    """Packs `value` with conduit's extension types (keyword options go to msgpack.packb)."""
    options.setdefault("use_bin_type", True)
    options.setdefault("datetime", True)
    return msgpack.packb(value, default=_default, **options)


def unpackb(data: bytes, **options: Any) -> Any:
    """Unpacks `data`, turning conduit's extension types into dict, set, int and datetime."""
    options.setdefault("raw", False)
    options.setdefault("timestamp", 3)  # datetime, in UTC
    options.setdefault("strict_map_key", False)  # conduit's Map keys may be of any type

    def ext_hook(code: int, payload: bytes) -> Any:
        if code == EXT_MAP:
            items = _payload_array(unpackb(payload, **options), "Map")
            if len(items) % 2:
                raise ValueError(f"a Map payload needs key/value pairs, got {len(items)} items")
            return {_hashable(items[i]): items[i + 1] for i in range(0, len(items), 2)}
        if code == EXT_SET:
            return {_hashable(item) for item in _payload_array(unpackb(payload, **options), "Set")}
        if code == EXT_BIGINT:
            if not payload:
                raise ValueError("a bigint payload needs at least one byte")
            return int.from_bytes(payload, "big", signed=True)
        return msgpack.ExtType(code, payload)

    return msgpack.unpackb(data, ext_hook=ext_hook, **options)


def _default(value: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        # msgpack calls this hook for an int outside 64 bits.
        magnitude = value if value >= 0 else ~value  # ~v = -v - 1: the bits a negative needs
        size = magnitude.bit_length() // 8 + 1  # and a sign bit: the fewest bytes, as conduit
        return msgpack.ExtType(EXT_BIGINT, value.to_bytes(size, "big", signed=True))
    if isinstance(value, (set, frozenset)):
        return msgpack.ExtType(EXT_SET, packb(list(value)))
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        raise TypeError("a naive datetime has no instant: give it a tzinfo (conduit sends UTC)")
    raise TypeError(f"cannot pack {type(value).__name__} as MessagePack")


def _payload_array(items: Any, what: str) -> list:
    if not isinstance(items, list):
        raise ValueError(f"a {what} payload must be an array")
    return items


def _hashable(key: Any) -> Any:
    if isinstance(key, list):
        return tuple(_hashable(item) for item in key)
    return key
