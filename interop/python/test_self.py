"""Two Python peers over a socketpair: the demo server and a client playing the TS side.

    python3 -m unittest interop/python/test_self.py      (or: python3 test_self.py)

This checks the Python peer is self-consistent; interop with conduit itself is checked by
interop/python_peer_test.ts.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import unittest
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conduit_peer import (ConnectionClosedError, HandshakeError, Peer, PeerOptions,  # noqa: E402
                          RemoteError, socket_streams)
from demo_server import DemoState, build_handlers, build_on_notify, greet  # noqa: E402


class PeerPairTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        a, b = socket.socketpair()
        self.state = DemoState()
        self.notes: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()

        async def ts_echo(param: Any, ctx: Any) -> Any:
            return param

        async def ts_double(param: Any, ctx: Any) -> Any:
            return param * 2

        window = PeerOptions(stream_window_bytes=4096)
        self.server = Peer(*await socket_streams(a), build_handlers(self.state),
                           build_on_notify(self.state), window, name="server")
        self.state.peer = self.server
        self.client = Peer(*await socket_streams(b), {"ts.echo": ts_echo, "ts.double": ts_double},
                           lambda m, p: self.notes.put_nowait((m, p)), window, name="client")
        await asyncio.gather(self.server.start(), self.client.start())
        await greet(self.server, self.state)

    async def asyncTearDown(self) -> None:
        await asyncio.gather(self.client.close(), self.server.serve_until_goodbye())
        self.assertEqual(self.state.problems, [])

    async def test_greeting_notification(self) -> None:
        method, param = await self.notes.get()
        self.assertEqual(method, "py.started")
        self.assertEqual(param["echoed"]["nested"]["text"], "héllo ✓")

    async def test_unary_and_nested_call_back(self) -> None:
        self.assertEqual(await self.client.call("add", {"a": 2, "b": 40}), 42)
        self.assertEqual(await self.client.call("callBack", {"x": 21}), 42)

    async def test_error_fields(self) -> None:
        with self.assertRaises(RemoteError) as caught:
            await self.client.call("fail")
        err = caught.exception
        self.assertEqual((err.name, err.message, err.code), ("DemoError", "python handler failed",
                                                             "demo_failure"))
        self.assertEqual(err.data, {"answer": 42, "list": [1, "two"]})
        self.assertEqual((err.cause.name, err.cause.code), ("IOError", "EIO"))

    async def test_method_not_found(self) -> None:
        with self.assertRaises(RemoteError) as caught:
            await self.client.call("nope")
        self.assertEqual(caught.exception.code, "method_not_found")

    async def test_notifications_both_ways(self) -> None:
        await self.client.notify("ts.poke", {"k": 1})
        while (note := await self.notes.get())[0] != "py.poked":
            pass
        self.assertEqual(note[1], {"k": 1})
        self.assertIn(["ts.poke", {"k": 1}], await self.client.call("notifications"))

    async def test_server_stream_beyond_the_window(self) -> None:
        items = [item async for item in self.client.call_stream("count", {"n": 200, "size": 100})]
        self.assertEqual([item["i"] for item in items], list(range(200)))

    async def test_client_stream_beyond_the_window(self) -> None:
        async def numbers():
            for i in range(2000):
                yield i
        self.assertEqual(await self.client.call("sum", param_stream=numbers()), sum(range(2000)))

    async def test_cancel_unary(self) -> None:
        with self.assertRaises(asyncio.TimeoutError):
            await self.client.call("slow", timeout=0.05)
        while (note := await self.notes.get())[0] != "py.cancelled":
            pass
        self.assertEqual(note[1]["method"], "slow")

    async def test_cancel_stream(self) -> None:
        got = []
        async for tick in self.client.call_stream("ticks"):
            got.append(tick)
            if len(got) == 5:
                break
        while (note := await self.notes.get())[0] != "py.cancelled":
            pass
        self.assertEqual(note[1]["method"], "ticks")
        self.assertGreaterEqual(note[1]["sent"], 5)

    async def test_ping(self) -> None:
        await self.client.ping()
        await self.server.ping()


class HandshakeTest(unittest.IsolatedAsyncioTestCase):
    async def test_codec_mismatch(self) -> None:
        try:
            import msgpack  # noqa: F401
        except ImportError:
            self.skipTest("msgpack is not installed")
        a, b = socket.socketpair()
        left = Peer(*await socket_streams(a), options=PeerOptions(codec="json"))
        right = Peer(*await socket_streams(b), options=PeerOptions(codec="msgpack"))
        results = await asyncio.gather(left.start(), right.start(), return_exceptions=True)
        for result in results:
            self.assertIsInstance(result, HandshakeError)
            self.assertIn("codec", str(result))

    async def test_peer_gone_settles_pending(self) -> None:
        a, b = socket.socketpair()
        left = Peer(*await socket_streams(a))
        right = Peer(*await socket_streams(b), {"slow": lambda p, c: asyncio.Event().wait()})
        await asyncio.gather(left.start(), right.start())
        pending = asyncio.create_task(left.call("slow"))
        await asyncio.sleep(0.05)
        await right._abort(ConnectionClosedError("test"))
        with self.assertRaises(ConnectionClosedError):
            await pending
        await left.wait_closed()


if __name__ == "__main__":
    unittest.main()
