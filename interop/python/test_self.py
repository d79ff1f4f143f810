"""Two Python peers over a socketpair: the demo server and a client playing the TS side.

    python3 -m unittest interop/python/test_self.py      (or: python3 test_self.py)

This checks the Python peer is self-consistent; interop with conduit itself is checked by
interop/python_peer_test.ts.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
import unittest
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conduit_peer import (CALL, CANCEL, DATA, END, ERROR, FLAG_META,  # noqa: E402
                          FLAG_STREAM_PARAM, GOODBYE, HELLO, PING, PONG, RESULT, CallMetaError,
                          CallTimeoutError,
                          ConnectionClosedError, Envelope, HandshakeError, Peer, PeerOptions,
                          RemoteError, auth_proof, auth_transcript, decode_envelope,
                          frame_bytes, json_body, read_frame, socket_streams)
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


HELLO_BODY = {"protocol": "conduit", "version": 1, "codec": "json", "maxFrameBytes": 1 << 20,
              "maxInFlight": 8, "streamWindowBytes": 1 << 16, "features": []}


class RawSide:
    """The other end written frame by frame, to hold the Python peer to the spec's rules."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    def send(self, env: Envelope) -> None:
        self.writer.write(frame_bytes(env.encode()))

    async def recv(self, kind: int | None = None) -> Envelope | None:
        """The next frame (of `kind`, skipping others); None at EOF."""
        while True:
            payload = await asyncio.wait_for(read_frame(self.reader, 1 << 20), 5)
            if payload is None:
                return None
            env = decode_envelope(payload)
            if kind is None or env.kind == kind:
                return env

    async def expect_protocol_error(self, test: unittest.TestCase) -> None:
        bye = await self.recv(GOODBYE)
        assert bye is not None
        test.assertEqual(json.loads(bye.body)["code"], "protocol_error")
        test.assertIsNone(await self.recv())  # and the peer closed the connection


class RawWireTest(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self) -> None:
        a, b = socket.socketpair()

        async def slow(param: Any, ctx: Any) -> Any:
            await asyncio.Event().wait()

        async def add(param: Any, ctx: Any) -> Any:
            return param["a"] + param["b"]

        async def total(items: Any, ctx: Any) -> Any:
            return sum([item async for item in items])

        self.peer = Peer(*await socket_streams(a), {"slow": slow, "add": add, "sum": total},
                         options=PeerOptions(stream_window_bytes=16))
        self.raw = RawSide(*await socket_streams(b))
        self.raw.send(Envelope(HELLO, body=json_body(HELLO_BODY)))
        await self.peer.start()
        hello = await self.raw.recv()
        assert hello is not None
        self.assertEqual(json.loads(hello.body)["streamWindowBytes"], 16)

    async def asyncTearDown(self) -> None:
        if not self.peer.closed:
            await self.peer._abort(ConnectionClosedError("test over"))
        self.raw.writer.close()

    async def test_result_and_no_value_body(self) -> None:
        self.raw.send(Envelope(CALL, id=1, method="add", body=b'{"a":1,"b":2}'))
        result = await self.raw.recv()
        self.assertEqual((result.kind, result.r, result.id, result.body), (RESULT, True, 1, b"3"))
        self.raw.send(Envelope(CALL, id=2, method="add"))  # empty body: no value -> TypeError
        error = await self.raw.recv()
        self.assertEqual((error.kind, json.loads(error.body)["name"]), (ERROR, "TypeError"))

    async def test_unknown_method(self) -> None:
        self.raw.send(Envelope(CALL, id=1, method="nope", body=b"1"))
        error = await self.raw.recv()
        self.assertEqual((error.kind, error.r), (ERROR, True))
        self.assertEqual(json.loads(error.body)["code"], "method_not_found")

    async def test_cancel_answers_cancelled_with_the_reason(self) -> None:
        self.raw.send(Envelope(CALL, id=1, method="slow"))
        await asyncio.sleep(0.02)
        self.raw.send(Envelope(CANCEL, id=1, body=b'{"reason":"enough"}'))
        error = json.loads((await self.raw.recv(ERROR)).body)
        self.assertEqual(error["code"], "cancelled")
        self.assertIn("enough", error["message"])
        self.raw.send(Envelope(CANCEL, id=1))  # for a finished call: ignored
        self.raw.send(Envelope(PING, id=0))
        self.assertEqual((await self.raw.recv()).kind, PONG)

    async def test_deadline_answers_deadline_exceeded(self) -> None:
        self.raw.send(Envelope(CALL, id=1, timeout_ms=30, method="slow"))
        error = json.loads((await self.raw.recv(ERROR)).body)
        self.assertEqual(error["code"], "deadline_exceeded")

    async def test_cancel_with_deadline_code_answers_deadline_exceeded(self) -> None:
        self.raw.send(Envelope(CALL, id=1, timeout_ms=60_000, method="slow"))
        self.raw.send(Envelope(CANCEL, id=1, body=b'{"code":"deadline_exceeded"}'))
        error = json.loads((await self.raw.recv(ERROR)).body)
        self.assertEqual(error["code"], "deadline_exceeded")

    async def test_call_ids_must_increase(self) -> None:
        self.raw.send(Envelope(CALL, id=5, method="slow"))
        self.raw.send(Envelope(CALL, id=5, method="slow"))
        await self.raw.expect_protocol_error(self)

    async def test_data_beyond_credit(self) -> None:
        self.raw.send(Envelope(CALL, id=1, flags=FLAG_STREAM_PARAM, method="sum"))
        for _ in range(4):  # 4 x 7 bytes against a 16-byte window, without waiting for CREDIT
            self.raw.send(Envelope(DATA, id=1, body=b"1000"))
        await self.raw.expect_protocol_error(self)

    async def test_result_for_an_id_never_issued(self) -> None:
        self.raw.send(Envelope(RESULT, r=True, id=9, body=b"1"))
        await self.raw.expect_protocol_error(self)

    async def test_call_after_goodbye(self) -> None:
        self.raw.send(Envelope(GOODBYE, body=b"{}"))
        self.assertIsNotNone(await self.raw.recv(GOODBYE))
        self.raw.send(Envelope(CALL, id=1, method="add", body=b'{"a":1,"b":2}'))
        await self.raw.expect_protocol_error(self)

    async def test_goodbye_with_a_code_fails_everything_at_once(self) -> None:
        pending = asyncio.create_task(self.peer.call("x"))
        await self.raw.recv(CALL)
        self.raw.send(Envelope(GOODBYE, body=b'{"code":"aborted","reason":"drain timeout"}'))
        with self.assertRaises(ConnectionClosedError):
            await asyncio.wait_for(pending, 5)
        self.assertIsNone(await self.raw.recv())  # closed, without answering the GOODBYE

    async def test_param_end_after_end(self) -> None:
        self.raw.send(Envelope(CALL, id=1, flags=FLAG_STREAM_PARAM, method="slow"))
        self.raw.send(Envelope(END, id=1))
        self.raw.send(Envelope(END, id=1))
        await self.raw.expect_protocol_error(self)

    async def test_late_frames_after_our_cancel_are_dropped(self) -> None:
        pending = asyncio.create_task(self.peer.call("x", timeout=0.05))
        call = await self.raw.recv(CALL)
        self.assertEqual(call.timeout_ms, 50)
        cancel = await self.raw.recv(CANCEL)
        self.assertEqual(json.loads(cancel.body)["code"], "deadline_exceeded")
        with self.assertRaises(CallTimeoutError):
            await pending
        self.raw.send(Envelope(RESULT, r=True, id=call.id, body=b"1"))  # crossed the CANCEL
        self.raw.send(Envelope(PING, id=7))
        pong = await self.raw.recv()  # still healthy: the late RESULT was no protocol error
        self.assertEqual((pong.kind, pong.id), (PONG, 7))
        self.raw.send(Envelope(RESULT, r=True, id=call.id, body=b"1"))  # now it is one
        await self.raw.expect_protocol_error(self)


class CallMetaTest(unittest.IsolatedAsyncioTestCase):
    """§6 call meta: headers read into ctx.headers, checked both ways."""

    async def open(self, features: list[str], max_frame_bytes: int = 1 << 20) -> None:
        a, b = socket.socketpair()

        async def seen(param: Any, ctx: Any) -> Any:
            return {"headers": dict(ctx.headers), "key": ctx.key, "attempt": ctx.attempt}

        self.peer = Peer(*await socket_streams(a), {"seen": seen})
        self.raw = RawSide(*await socket_streams(b))
        self.raw.send(Envelope(HELLO, body=json_body(
            {**HELLO_BODY, "features": features, "maxFrameBytes": max_frame_bytes})))
        await self.peer.start()
        hello = await self.raw.recv()
        self.assertEqual(json.loads(hello.body)["features"], ["call-meta"])

    async def asyncTearDown(self) -> None:
        if not self.peer.closed:
            await self.peer._abort(ConnectionClosedError("test over"))
        self.raw.writer.close()

    async def test_headers_reach_the_handler(self) -> None:
        await self.open([])
        headers = {"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                   "x.y_z-9": "", "v": "~" * 1024}
        headers.update({f"h{i}": " !" for i in range(29)})  # 32 in all: the limit
        meta = json_body({"headers": headers, "key": "k", "attempt": 2.0, "later": [1]})
        self.raw.send(Envelope(CALL, id=1, flags=FLAG_META, method="seen", meta=meta))
        result = await self.raw.recv(RESULT)
        self.assertEqual(json.loads(result.body),
                         {"headers": headers, "key": "k", "attempt": 2})
        self.raw.send(Envelope(CALL, id=2, method="seen"))  # no meta: empty headers
        result = await self.raw.recv(RESULT)
        self.assertEqual(json.loads(result.body), {"headers": {}, "key": None, "attempt": 1})

    async def test_a_meta_that_breaks_the_limits_is_a_protocol_error(self) -> None:
        for headers in ({f"h{i}": "v" for i in range(33)}, {"x" * 65: "v"}, {"Upper": "v"},
                        {"__proto__": "v"}, {"-a": "v"}, {"a": "v" * 1025}, {"a": "\u00e9"},
                        {"a": "\t"}, {"a": 7}, ["a"], "a"):
            with self.subTest(headers=headers):
                await self.open([])
                self.raw.send(Envelope(CALL, id=1, flags=FLAG_META, method="seen",
                                       meta=json_body({"headers": headers})))
                bye = await self.raw.recv(GOODBYE)
                body = json.loads(bye.body)
                self.assertEqual(body["code"], "protocol_error")
                self.assertIn("meta headers", body["reason"])
                self.assertIsNone(await self.raw.recv())  # no RESULT: the handler never ran
                await self.asyncTearDown()

    async def test_headers_are_sent_to_a_peer_that_reads_them(self) -> None:
        await self.open(["call-meta"])
        pending = asyncio.create_task(self.peer.call("m", headers={"traceparent": "00-ab"},
                                                     key="k"))
        call = await self.raw.recv(CALL)
        self.assertEqual(call.flags, FLAG_META)
        self.assertEqual(call.meta, b'{"key":"k","headers":{"traceparent":"00-ab"}}')
        self.raw.send(Envelope(RESULT, r=True, id=call.id, body=b"1"))
        self.assertEqual(await pending, 1)
        pending = asyncio.create_task(self.peer.call("m", headers={}))  # nothing to send
        call = await self.raw.recv(CALL)
        self.assertEqual((call.flags, call.meta), (0, None))
        self.raw.send(Envelope(RESULT, r=True, id=call.id, body=b"2"))
        self.assertEqual(await pending, 2)

    async def test_headers_are_left_out_for_a_peer_without_call_meta(self) -> None:
        await self.open([])
        pending = asyncio.create_task(self.peer.call("m", headers={"a": "b"}))
        call = await self.raw.recv(CALL)
        self.assertEqual((call.flags, call.meta), (0, None))
        self.raw.send(Envelope(RESULT, r=True, id=call.id, body=b"1"))
        self.assertEqual(await pending, 1)

    async def test_headers_are_left_out_of_a_call_over_the_peer_limit(self) -> None:
        await self.open(["call-meta"], max_frame_bytes=1024)
        pending = asyncio.create_task(self.peer.call("m", "x" * 900, headers={"a": "b" * 200}))
        call = await self.raw.recv(CALL)
        self.assertEqual((call.flags, call.meta), (0, None))
        self.raw.send(Envelope(RESULT, r=True, id=call.id, body=b"1"))
        self.assertEqual(await pending, 1)

    async def test_bad_headers_are_refused_before_sending(self) -> None:
        await self.open(["call-meta"])
        cases = [({f"h{i}": "v" for i in range(33)}, "33 headers, at most 32"),
                 ({"Bad": "v"}, "header name 'Bad' is not 1 to 64"),
                 ({"a": "caf\u00e9"}, "header 'a' must be a string of 0 to 1024 printable"),
                 ({f"h{i}": "v" * 1000 for i in range(5)}, "over 4096")]
        for headers, problem in cases:
            with self.subTest(problem=problem):
                with self.assertRaises(CallMetaError) as caught:
                    await self.peer.call("m", headers=headers)
                self.assertEqual(caught.exception.option, "headers")
                self.assertIn("call to 'm': option 'headers'", str(caught.exception))
                self.assertIn(problem, str(caught.exception))
                with self.assertRaises(CallMetaError):
                    await anext(self.peer.call_stream("m", headers=headers))
        self.raw.send(Envelope(PING, id=3))  # nothing was sent: the next frame is the PONG
        self.assertEqual((await self.raw.recv()).kind, PONG)


class HandshakeRulesTest(unittest.IsolatedAsyncioTestCase):
    async def handshake(self, **changes: Any) -> tuple[BaseException | None, dict[str, Any]]:
        a, b = socket.socketpair()
        peer = Peer(*await socket_streams(a))
        raw = RawSide(*await socket_streams(b))
        raw.send(Envelope(HELLO, body=json_body({**HELLO_BODY, **changes})))
        try:
            await peer.start()
            error = None
        except HandshakeError as err:
            error = err
        await raw.recv(HELLO)
        bye = await raw.recv(GOODBYE) if error else None
        raw.writer.close()
        if not peer.closed:
            await peer._abort(ConnectionClosedError("test over"))
        return error, json.loads(bye.body) if bye else {}

    async def test_checks_in_order(self) -> None:
        cases = [({"protocol": "x", "version": 2}, "protocol_mismatch"),
                 ({"version": 2, "codec": "raw"}, "version_mismatch"),
                 ({"codec": "raw"}, "codec_mismatch"),
                 ({"maxFrameBytes": 1023}, "invalid_hello"),
                 ({"features": [1]}, "invalid_hello")]
        for changes, code in cases:
            error, bye = await self.handshake(**changes)
            self.assertEqual((getattr(error, "code", None), bye.get("code")), (code, code))

    async def test_integers_are_values_not_spellings(self) -> None:
        for changes, code in (({"version": True}, "version_mismatch"),
                              ({"maxInFlight": 8.5}, "invalid_hello"),
                              ({"maxInFlight": 2**53}, "invalid_hello")):
            error, bye = await self.handshake(**changes)
            self.assertEqual((getattr(error, "code", None), bye.get("code")), (code, code))
        error, _ = await self.handshake(maxInFlight=8.0, maxFrameBytes=2**53 - 1)
        self.assertIsNone(error)

    async def test_handshake_timeout_says_goodbye(self) -> None:
        a, b = socket.socketpair()
        peer = Peer(*await socket_streams(a), options=PeerOptions(handshake_timeout=0.05))
        raw = RawSide(*await socket_streams(b))
        with self.assertRaises(HandshakeError) as caught:
            await peer.start()
        self.assertEqual(caught.exception.code, "handshake_timeout")
        await raw.recv(HELLO)
        bye = await raw.recv(GOODBYE)
        self.assertEqual(json.loads(bye.body)["code"], "handshake_timeout")
        raw.writer.close()

    async def test_param_item_too_big_fails_the_stream_with_frame_too_large(self) -> None:
        a, b = socket.socketpair()
        peer = Peer(*await socket_streams(a))
        raw = RawSide(*await socket_streams(b))
        raw.send(Envelope(HELLO, body=json_body({**HELLO_BODY, "maxFrameBytes": 1024})))
        await peer.start()

        async def items():
            yield "x" * 1100

        pending = asyncio.create_task(peer.call("sum", param_stream=items()))
        call = await raw.recv(CALL)
        failure = await raw.recv(ERROR)
        self.assertEqual((failure.r, failure.id), (False, call.id))
        self.assertEqual(json.loads(failure.body)["code"], "frame_too_large")
        raw.send(Envelope(ERROR, r=True, id=call.id, body=b'{"name":"Error","message":"no"}'))
        with self.assertRaises(RemoteError):
            await pending
        raw.writer.close()
        await peer._abort(ConnectionClosedError("test over"))

    async def test_unknown_fields_are_ignored(self) -> None:
        error, _ = await self.handshake(future={"x": 1}, features=["later"])
        self.assertIsNone(error)


class AuthTest(unittest.IsolatedAsyncioTestCase):
    """§5.1 from the vectors, and two Python peers authenticating in their roles."""

    def test_vectors(self) -> None:
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata",
                            "protocol", "vectors.json")
        with open(path, encoding="utf-8") as file:
            cases = json.load(file)["auth"]["cases"]
        for case in cases:
            secret = bytes.fromhex(case["secretHex"])
            transcript = auth_transcript(case["helloI"].encode(), case["helloR"].encode())
            self.assertEqual(transcript.hex(), case["transcript"])
            self.assertEqual(auth_proof(secret, "initiator", transcript).hex(), case["proofI"])
            self.assertEqual(auth_proof(secret, "responder", transcript).hex(), case["proofR"])

    async def pair(self, secret_a: bytes, secret_b: bytes, role_b: str = "initiator"
                   ) -> tuple[BaseException | None, BaseException | None]:
        a, b = socket.socketpair()
        responder = Peer(*await socket_streams(a), {"add": lambda p, ctx: p["a"] + p["b"]},
                         options=PeerOptions(secret=secret_a, role="responder", handshake_timeout=2))
        initiator = Peer(*await socket_streams(b), {},
                         options=PeerOptions(secret=secret_b, role=role_b, handshake_timeout=2))
        results = await asyncio.gather(responder.start(), initiator.start(), return_exceptions=True)
        if not any(isinstance(result, BaseException) for result in results):
            self.assertEqual(await initiator.call("add", {"a": 2, "b": 3}), 5)
            await asyncio.gather(initiator.close(), responder.serve_until_goodbye())
        else:
            for peer in (initiator, responder):
                await peer._abort(ConnectionClosedError("test over"))
        return tuple(r if isinstance(r, BaseException) else None for r in results)  # type: ignore

    async def test_same_secret_opens(self) -> None:
        self.assertEqual(await self.pair(b"k" * 32, b"k" * 32), (None, None))

    async def test_wrong_secret_and_same_role_fail(self) -> None:
        for secret_b, role_b in ((b"o" * 32, "initiator"), (b"k" * 32, "responder")):
            errors = await self.pair(b"k" * 32, secret_b, role_b)
            self.assertTrue(all(isinstance(e, HandshakeError) for e in errors), errors)

    def test_short_secret_is_refused(self) -> None:
        for secret in (b"", b"other", b"k" * 15):
            with self.assertRaisesRegex(ValueError, rf"secret is {len(secret)} bytes, under 16"):
                PeerOptions(secret=secret)
        self.assertEqual(PeerOptions(secret=b"k" * 16).secret, b"k" * 16)


if __name__ == "__main__":
    unittest.main()
