"""A conduit peer over stdio speaking msgpack, for interop/codecs_msgpack_peer_test.ts: it shows
which Python types conduit's values arrive as through conduit_peer.py (which packs and unpacks
with conduit_msgpack) and sends each value back.

    python3 msgpack_peer.py

Handlers:
  describe(value) -> {"types": the Python type of the value, recursively, "echo": value}
  python()        -> values made in Python: a dict with int keys, a set, big ints, a datetime
"""

from __future__ import annotations

import asyncio
import datetime
import os
import sys
from typing import Any

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "python"))
from conduit_peer import CallContext, Peer, PeerOptions, stdio_streams  # noqa: E402


def types(value: Any) -> Any:
    """The Python type names in `value`, in the same shape (dict keys as their repr)."""
    if isinstance(value, dict):
        return {"dict": {repr(k): types(v) for k, v in value.items()}}
    if isinstance(value, list):
        return {"list": [types(v) for v in value]}
    if isinstance(value, (set, frozenset)):
        return {"set": sorted(repr(v) for v in value)}
    return type(value).__name__


async def describe(value: Any, ctx: CallContext) -> Any:
    return {"types": types(value), "echo": value}


async def python(param: Any, ctx: CallContext) -> Any:
    return {
        "int keys": {1: "one", 2: "two"},
        "set": {1, 2, 3},
        "small": 5,
        "big": 2**64,
        "negative big": -(2**70),
        "at": datetime.datetime(2024, 5, 6, 7, 8, 9, 10_000, tzinfo=datetime.timezone.utc),
    }


async def main() -> int:
    reader, writer = await stdio_streams()
    handlers = {"describe": describe, "python": python}
    peer = Peer(reader, writer, handlers, None, PeerOptions(codec="msgpack"), name="py-msgpack")
    await peer.start()
    await peer.serve_until_goodbye()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
