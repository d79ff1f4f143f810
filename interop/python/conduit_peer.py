"""A conduit wire protocol v1 peer in Python 3, standard library only.

Written from docs/protocol.md to prove that the spec alone is enough to talk to conduit.
It is an interop test peer, not a product: readable first, fast enough for tests.

Layers, bottom to top:
  frames     4-byte big-endian length + payload            (read_frame / write_frame)
  envelope   type byte (kind | R flag), varint fields, body  (Envelope.encode / decode_envelope)
  body       codec bytes (JSON here; msgpack if installed) or UTF-8 JSON for control frames
  Peer       handshake, calls both ways, notifications, streams with credit, cancel, goodbye

Handlers are plain async functions `async def h(param, ctx)`; an async generator function
is a server-stream handler (each `yield` sends one DATA frame). A call whose CALL frame has
the STREAM_PARAM flag gets an async iterator of the caller's items as `param`.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
import socket
import sys
from dataclasses import dataclass
from typing import Any, AsyncIterable, AsyncIterator, Awaitable, Callable

# --------------------------------------------------------------------------------------------
# Constants from the spec

PROTOCOL = "conduit"
VERSION = 1

HELLO = 0x01
GOODBYE = 0x02
PING = 0x03
PONG = 0x04
CALL = 0x10
NOTIFY = 0x11
RESULT = 0x12
ERROR = 0x13
CANCEL = 0x14
DATA = 0x20
END = 0x21
CREDIT = 0x22

KIND_NAMES = {
    HELLO: "HELLO", GOODBYE: "GOODBYE", PING: "PING", PONG: "PONG", CALL: "CALL",
    NOTIFY: "NOTIFY", RESULT: "RESULT", ERROR: "ERROR", CANCEL: "CANCEL", DATA: "DATA",
    END: "END", CREDIT: "CREDIT",
}

R_FLAG = 0x80
KIND_MASK = 0x7F
FLAG_STREAM_PARAM = 0x01

MAX_SAFE_INTEGER = 2**53 - 1
MAX_VARINT_BYTES = 8
MAX_CAUSE_DEPTH = 8

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_IN_FLIGHT = 1024
DEFAULT_STREAM_WINDOW_BYTES = 256 * 1024
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_DRAIN_TIMEOUT = 5.0


class ProtocolError(Exception):
    """The peer broke the wire protocol (bad varint, unknown kind, frame for a dead id...)."""


class HandshakeError(Exception):
    """HELLO was missing, malformed or incompatible."""


class ConnectionClosedError(Exception):
    """The connection closed while something was pending."""


# --------------------------------------------------------------------------------------------
# Varint: unsigned LEB128

def encode_varint(value: int) -> bytes:
    """Encodes a non-negative integer as minimal unsigned LEB128."""
    if not 0 <= value <= MAX_SAFE_INTEGER:
        raise ValueError(f"varint {value} is outside 0..{MAX_SAFE_INTEGER}")
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def decode_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Reads a varint at `pos`; returns (value, next position). Raises ProtocolError."""
    value = 0
    shift = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            raise ProtocolError(f"truncated varint at byte {pos}")
        byte = buf[pos + i]
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            if value > MAX_SAFE_INTEGER:
                raise ProtocolError(f"varint {value} exceeds {MAX_SAFE_INTEGER}")
            return value, pos + i + 1
    raise ProtocolError(f"varint at byte {pos} is longer than {MAX_VARINT_BYTES} bytes")


# --------------------------------------------------------------------------------------------
# Envelope

@dataclass
class Envelope:
    """One decoded frame payload. `id` doubles as the nonce of PING/PONG."""

    kind: int
    r: bool = False
    id: int = 0
    flags: int = 0
    timeout_ms: int = 0
    method: str = ""
    credit: int = 0
    body: bytes = b""

    def encode(self) -> bytes:
        """Encodes the envelope as one frame payload (without the length prefix)."""
        out = bytearray([self.kind | (R_FLAG if self.r else 0)])
        if self.kind in (PING, PONG, RESULT, ERROR, CANCEL, DATA, END):
            out += encode_varint(self.id)
        elif self.kind == CALL:
            method = self.method.encode("utf-8")
            out += encode_varint(self.id) + encode_varint(self.flags)
            out += encode_varint(self.timeout_ms) + encode_varint(len(method)) + method
        elif self.kind == NOTIFY:
            method = self.method.encode("utf-8")
            out += encode_varint(len(method)) + method
        elif self.kind == CREDIT:
            out += encode_varint(self.id) + encode_varint(self.credit)
        out += self.body
        return bytes(out)

    def describe(self) -> str:
        name = KIND_NAMES.get(self.kind, hex(self.kind))
        return f"{name}{'(R)' if self.r else ''} id={self.id}"


def decode_envelope(payload: bytes) -> Envelope:
    """Parses one frame payload into an Envelope. Raises ProtocolError on malformed input."""
    if not payload:
        raise ProtocolError("empty frame")
    type_byte = payload[0]
    kind = type_byte & KIND_MASK
    env = Envelope(kind=kind, r=bool(type_byte & R_FLAG))
    pos = 1
    if kind in (HELLO, GOODBYE):
        pass
    elif kind in (PING, PONG, RESULT, ERROR, CANCEL, DATA, END):
        env.id, pos = decode_varint(payload, pos)
    elif kind == CALL:
        env.id, pos = decode_varint(payload, pos)
        env.flags, pos = decode_varint(payload, pos)
        env.timeout_ms, pos = decode_varint(payload, pos)
        env.method, pos = _read_method(payload, pos)
    elif kind == NOTIFY:
        env.method, pos = _read_method(payload, pos)
    elif kind == CREDIT:
        env.id, pos = decode_varint(payload, pos)
        env.credit, pos = decode_varint(payload, pos)
    else:
        raise ProtocolError(f"unknown frame kind 0x{kind:02x}")
    env.body = bytes(payload[pos:])
    return env


def _read_method(payload: bytes, pos: int) -> tuple[str, int]:
    length, pos = decode_varint(payload, pos)
    if pos + length > len(payload):
        raise ProtocolError(f"method length {length} runs past the frame end ({len(payload)})")
    try:
        return payload[pos:pos + length].decode("utf-8"), pos + length
    except UnicodeDecodeError as err:
        raise ProtocolError(f"method name is not UTF-8: {err}") from None


def json_body(obj: Any) -> bytes:
    """Control-frame bodies (HELLO, GOODBYE, ERROR, CANCEL) are compact UTF-8 JSON."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_json_body(body: bytes, what: str) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ProtocolError(f"{what} body is not UTF-8 JSON: {err}") from None


# --------------------------------------------------------------------------------------------
# Codecs: the body of CALL, NOTIFY, RESULT and DATA

class JsonCodec:
    name = "json"

    def encode(self, value: Any) -> bytes:
        return json_body(value)

    def decode(self, data: bytes) -> Any:
        return json.loads(data.decode("utf-8"))


class MsgpackCodec:
    name = "msgpack"

    def __init__(self) -> None:
        import msgpack  # optional: pip install msgpack
        self._msgpack = msgpack

    def encode(self, value: Any) -> bytes:
        return self._msgpack.packb(value, use_bin_type=True)

    def decode(self, data: bytes) -> Any:
        return self._msgpack.unpackb(data, raw=False)


def make_codec(name: str) -> JsonCodec | MsgpackCodec:
    if name == "json":
        return JsonCodec()
    if name == "msgpack":
        return MsgpackCodec()
    raise ValueError(f"unknown codec {name!r} (json or msgpack)")


# --------------------------------------------------------------------------------------------
# Errors on the wire

class RemoteError(Exception):
    """An error as it travels: name, message, code, data, stack, cause (another RemoteError).

    Raise one from a handler to control every field; any other exception is sent with its
    class name and message, and its `__cause__` chain becomes `cause`.
    """

    def __init__(self, message: str, *, name: str = "Error", code: str | None = None,
                 data: Any = None, stack: str | None = None,
                 cause: RemoteError | None = None) -> None:
        super().__init__(message)
        self.name = name
        self.message = message
        self.code = code
        self.data = data
        self.stack = stack
        self.cause = cause

    def __repr__(self) -> str:
        return f"RemoteError({self.name}: {self.message!r}, code={self.code!r})"


def error_to_wire(err: BaseException, depth: int = 0) -> dict[str, Any]:
    """Turns an exception (and its cause chain, depth-limited) into an ERROR body object."""
    if isinstance(err, RemoteError):
        obj: dict[str, Any] = {"name": err.name, "message": err.message}
        if err.code is not None:
            obj["code"] = err.code
        if err.data is not None:
            obj["data"] = err.data
        if err.stack is not None:
            obj["stack"] = err.stack
        cause: BaseException | None = err.cause or err.__cause__
    else:
        obj = {"name": type(err).__name__, "message": str(err)}
        cause = err.__cause__
    if cause is not None and depth + 1 < MAX_CAUSE_DEPTH:
        obj["cause"] = error_to_wire(cause, depth + 1)
    return obj


def error_from_wire(obj: Any, depth: int = 0) -> RemoteError:
    """Parses an ERROR body object into a RemoteError. Raises ProtocolError if malformed."""
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) \
            or not isinstance(obj.get("message"), str):
        raise ProtocolError(f"error object needs string name and message, got {obj!r:.200}")
    cause = None
    if isinstance(obj.get("cause"), dict) and depth + 1 < MAX_CAUSE_DEPTH:
        cause = error_from_wire(obj["cause"], depth + 1)
    code = obj.get("code")
    stack = obj.get("stack")
    return RemoteError(obj["message"], name=obj["name"],
                       code=code if isinstance(code, str) else None,
                       data=obj.get("data"), stack=stack if isinstance(stack, str) else None,
                       cause=cause)


# --------------------------------------------------------------------------------------------
# Frames on a byte stream

async def read_frame(reader: asyncio.StreamReader, max_frame_bytes: int) -> bytes | None:
    """Reads one length-prefixed frame payload; None on a clean EOF between frames."""
    try:
        header = await reader.readexactly(4)
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise ConnectionClosedError("stream ended inside a frame header") from None
    length = int.from_bytes(header, "big")
    if length > max_frame_bytes:
        raise ProtocolError(f"frame of {length} bytes exceeds maxFrameBytes ({max_frame_bytes})")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as err:
        raise ConnectionClosedError(
            f"stream ended mid-frame: {length - len(err.partial)} more byte(s) expected") from None


def frame_bytes(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


# --------------------------------------------------------------------------------------------
# The peer

Handler = Callable[..., Any]


@dataclass
class PeerOptions:
    codec: str = "json"
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    stream_window_bytes: int = DEFAULT_STREAM_WINDOW_BYTES
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    drain_timeout: float = DEFAULT_DRAIN_TIMEOUT


class CallContext:
    """What a handler knows about its call: the method, and whether it was cancelled."""

    def __init__(self, peer: Peer, call_id: int, method: str) -> None:
        self.peer = peer
        self.id = call_id
        self.method = method
        self.cancelled = asyncio.Event()
        self.cancel_reason: str | None = None


class _Credit:
    """Byte credit of one outgoing stream: send while > 0, then wait for CREDIT."""

    def __init__(self, initial: int) -> None:
        self.value = initial
        self._changed = asyncio.Event()

    def grant(self, amount: int) -> None:
        self.value += amount
        self._changed.set()

    async def wait_positive(self) -> None:
        while self.value <= 0:
            self._changed.clear()
            await self._changed.wait()


class _InStream:
    """Items arriving on a stream we consume, granting credit back as they are consumed."""

    def __init__(self, peer: Peer, call_id: int, r_flag_for_credit: bool) -> None:
        self._peer = peer
        self._id = call_id
        self._r = r_flag_for_credit
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._consumed_since_grant = 0
        self.finished = False

    def push(self, item: Any, cost: int) -> None:
        self._queue.put_nowait(("item", (item, cost)))

    def end(self) -> None:
        self.finished = True
        self._queue.put_nowait(("end", None))

    def fail(self, err: BaseException) -> None:
        self.finished = True
        self._queue.put_nowait(("error", err))

    def __aiter__(self) -> _InStream:
        return self

    async def __anext__(self) -> Any:
        tag, value = await self._queue.get()
        if tag == "end":
            raise StopAsyncIteration
        if tag == "error":
            raise value
        item, cost = value
        self._consumed_since_grant += cost
        window = self._peer.options.stream_window_bytes
        if self._consumed_since_grant >= window // 2 and not self.finished:
            grant, self._consumed_since_grant = self._consumed_since_grant, 0
            self._peer._send(Envelope(CREDIT, r=self._r, id=self._id, credit=grant))
        return item


class _OutCall:
    """A call we started: its result future, result stream and param-stream credit."""

    def __init__(self, call_id: int, method: str) -> None:
        self.id = call_id
        self.method = method
        self.result: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.stream: _InStream | None = None
        self.param_credit: _Credit | None = None
        self.param_stop = asyncio.Event()  # CANCEL(R=1): the handler stopped reading
        self.param_task: asyncio.Task[None] | None = None


class _InCall:
    """A call the peer started: the handler task, its context, and stream state."""

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx
        self.task: asyncio.Task[None] | None = None
        self.param_stream: _InStream | None = None
        self.result_credit: _Credit | None = None


class Peer:
    """One end of a conduit connection over an asyncio (reader, writer) pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 handlers: dict[str, Handler] | None = None,
                 on_notify: Callable[[str, Any], Any] | None = None,
                 options: PeerOptions | None = None, name: str = "py") -> None:
        self.options = options or PeerOptions()
        self.codec = make_codec(self.options.codec)
        self.handlers = dict(handlers or {})
        self.on_notify = on_notify
        self.name = name
        self.remote_hello: dict[str, Any] = {}
        self._reader = reader
        self._writer = writer
        self._next_id = 1
        self._out: dict[int, _OutCall] = {}
        self._in: dict[int, _InCall] = {}
        self._finished_out: set[int] = set()  # cancelled by us: late frames are expected
        self._pings: dict[int, asyncio.Future[None]] = {}
        self._next_nonce = 1
        self._call_slots: asyncio.Semaphore | None = None
        self._sent_goodbye = False
        self._received_goodbye = asyncio.Event()
        self._closed = asyncio.Event()
        self._close_error: BaseException | None = None
        self._read_task: asyncio.Task[None] | None = None

    # ---- logging ---------------------------------------------------------------------------

    def log(self, message: str) -> None:
        if os.environ.get("CONDUIT_PY_DEBUG"):
            print(f"[{self.name}] {message}", file=sys.stderr, flush=True)

    # ---- lifecycle -------------------------------------------------------------------------

    async def start(self) -> None:
        """Sends HELLO, waits for the peer's HELLO, validates it and starts reading."""
        hello = {
            "protocol": PROTOCOL, "version": VERSION, "codec": self.codec.name,
            "maxFrameBytes": self.options.max_frame_bytes,
            "maxInFlight": self.options.max_in_flight,
            "streamWindowBytes": self.options.stream_window_bytes, "features": [],
        }
        self._send(Envelope(HELLO, body=json_body(hello)))
        try:
            payload = await asyncio.wait_for(
                read_frame(self._reader, self.options.max_frame_bytes),
                self.options.handshake_timeout)
        except asyncio.TimeoutError:
            await self._abort(HandshakeError("no HELLO within the handshake timeout"))
            raise HandshakeError(
                f"no HELLO within {self.options.handshake_timeout}s") from None
        if payload is None:
            await self._abort(ConnectionClosedError("peer closed before HELLO"))
            raise HandshakeError("peer closed before sending HELLO")
        env = decode_envelope(payload)
        if env.kind != HELLO:
            await self._fail_protocol(ProtocolError(
                f"first frame must be HELLO, got {env.describe()}"))
            raise HandshakeError(f"first frame was {env.describe()}, not HELLO")
        remote = parse_json_body(env.body, "HELLO")
        mismatch = self._check_hello(remote)
        if mismatch:
            code, reason = mismatch
            self._send(Envelope(GOODBYE, body=json_body({"code": code, "reason": reason})))
            await self._abort(HandshakeError(reason))
            raise HandshakeError(reason)
        self.remote_hello = remote
        self._call_slots = asyncio.Semaphore(int(remote.get("maxInFlight", 1024)))
        self._read_task = asyncio.create_task(self._read_loop())
        self.log(f"handshake done: {remote}")

    def _check_hello(self, remote: Any) -> tuple[str, str] | None:
        if not isinstance(remote, dict) or remote.get("protocol") != PROTOCOL:
            got = remote.get("protocol") if isinstance(remote, dict) else remote
            return "protocol_mismatch", f"protocol {got!r} is not {PROTOCOL!r}"
        if remote.get("version") != VERSION:
            return "version_mismatch", f"version {remote.get('version')!r} is not {VERSION}"
        if remote.get("codec") != self.codec.name:
            return ("codec_mismatch",
                    f"codec {remote.get('codec')!r} differs from {self.codec.name!r}")
        for field in ("maxFrameBytes", "maxInFlight", "streamWindowBytes"):
            value = remote.get(field)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                return "protocol_error", f"HELLO {field} must be a positive integer, got {value!r}"
        return None

    async def close(self, reason: str = "done") -> None:
        """Graceful close: GOODBYE, finish in-flight work, wait for the peer's GOODBYE."""
        self._send_goodbye({"reason": reason})
        try:
            await asyncio.wait_for(self._drained_and_acknowledged(), self.options.drain_timeout)
        except asyncio.TimeoutError:
            self.log("drain timeout: aborting")
        await self._abort(ConnectionClosedError("closed"))

    async def wait_closed(self) -> None:
        """Waits until the connection is closed (by either side)."""
        await self._closed.wait()

    async def serve_until_goodbye(self) -> None:
        """Serves until the peer says GOODBYE (or the transport ends), then closes cleanly."""
        closed = asyncio.create_task(self._closed.wait())
        bye = asyncio.create_task(self._received_goodbye.wait())
        await asyncio.wait({closed, bye}, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel()
        bye.cancel()
        if not self._closed.is_set():
            await self.close("peer said goodbye")

    async def _drained_and_acknowledged(self) -> None:
        while self._out or self._in or not self._received_goodbye.is_set():
            if self._closed.is_set():
                return
            await asyncio.sleep(0.005)

    def _send_goodbye(self, body: dict[str, Any]) -> None:
        if not self._sent_goodbye and not self._closed.is_set():
            self._sent_goodbye = True
            self._send(Envelope(GOODBYE, body=json_body(body)))

    async def _abort(self, err: BaseException) -> None:
        """Closes the transport and settles everything pending with ConnectionClosedError."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._close_error = err
        closed = err if isinstance(err, ConnectionClosedError) else \
            ConnectionClosedError(f"connection closed: {err}")
        if closed is not err:
            closed.__cause__ = err
        for call in list(self._out.values()):
            if not call.result.done():
                call.result.set_exception(closed)
                call.result.exception()  # mark retrieved: a caller may be gone already
            if call.stream and not call.stream.finished:
                call.stream.fail(closed)
            if call.param_task:
                call.param_task.cancel()
        for incoming in list(self._in.values()):
            incoming.ctx.cancelled.set()
            if incoming.task:
                incoming.task.cancel()
        for fut in self._pings.values():
            if not fut.done():
                fut.set_exception(closed)
        self._out.clear()
        self._in.clear()
        try:
            if self._writer.can_write_eof():
                self._writer.write_eof()
        except (OSError, RuntimeError):
            pass
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (OSError, ConnectionError):
            pass
        if self._read_task and self._read_task is not asyncio.current_task():
            self._read_task.cancel()

    async def _fail_protocol(self, err: ProtocolError) -> None:
        self.log(f"protocol error: {err}")
        if not self._sent_goodbye and not self._closed.is_set():
            self._sent_goodbye = True
            self._send(Envelope(GOODBYE, body=json_body(
                {"code": "protocol_error", "reason": str(err)})))
        await self._abort(err)

    # ---- writing ---------------------------------------------------------------------------

    def _send(self, env: Envelope) -> None:
        if self._closed.is_set():
            return
        payload = env.encode()
        limit = self.remote_hello.get("maxFrameBytes", DEFAULT_MAX_FRAME_BYTES)
        if len(payload) > limit:
            raise ValueError(f"frame of {len(payload)} bytes exceeds the peer's maxFrameBytes "
                             f"({limit})")
        self.log(f"send {env.describe()}")
        self._writer.write(frame_bytes(payload))

    async def _flush(self) -> None:
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as err:
            await self._abort(ConnectionClosedError(f"write failed: {err}"))

    # ---- public calls ----------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise ConnectionClosedError("connection is closed")
        if self._sent_goodbye or self._received_goodbye.is_set():
            raise ConnectionClosedError("connection is closing (GOODBYE)")

    async def call(self, method: str, param: Any = None, *, timeout: float | None = None,
                   param_stream: AsyncIterable[Any] | None = None) -> Any:
        """Calls `method` and returns its result. Pass `param_stream` for a client stream."""
        call = await self._start_call(method, param, timeout, param_stream)
        try:
            if timeout is None:
                return await asyncio.shield(call.result)
            return await asyncio.wait_for(asyncio.shield(call.result), timeout)
        except asyncio.TimeoutError:
            self._cancel_out(call, "deadline exceeded")
            raise
        except asyncio.CancelledError:
            self._cancel_out(call, "caller cancelled")
            raise

    async def call_stream(self, method: str, param: Any = None) -> AsyncIterator[Any]:
        """Calls a server-stream method; yields its items. Closing early sends CANCEL."""
        call = await self._start_call(method, param, None, None, want_stream=True)
        assert call.stream is not None
        completed = False
        try:
            async for item in call.stream:
                yield item
            completed = True
        finally:
            if not completed:
                self._cancel_out(call, "consumer stopped")

    def _cancel_out(self, call: _OutCall, reason: str) -> None:
        if call.id in self._out:
            self._send(Envelope(CANCEL, id=call.id, body=json_body({"reason": reason})))
            self._finish_out(call.id, cancelled=True)

    async def _start_call(self, method: str, param: Any, timeout: float | None,
                          param_stream: AsyncIterable[Any] | None,
                          want_stream: bool = False) -> _OutCall:
        self._check_open()
        assert self._call_slots is not None, "call start() first"
        await self._call_slots.acquire()
        self._check_open()
        call_id = self._next_id
        self._next_id += 1
        call = _OutCall(call_id, method)
        # The result future is awaited via shield; the stream path may never look at it.
        call.result.add_done_callback(lambda f: f.cancelled() or f.exception())
        if want_stream:
            call.stream = _InStream(self, call_id, r_flag_for_credit=False)
        self._out[call_id] = call
        flags = FLAG_STREAM_PARAM if param_stream is not None else 0
        timeout_ms = 0 if timeout is None else max(1, int(timeout * 1000))
        body = b"" if param_stream is not None else self.codec.encode(param)
        self._send(Envelope(CALL, id=call_id, flags=flags, timeout_ms=timeout_ms, method=method,
                            body=body))
        if param_stream is not None:
            call.param_credit = _Credit(int(self.remote_hello["streamWindowBytes"]))
            call.param_task = asyncio.create_task(self._send_param_stream(call, param_stream))
        await self._flush()
        return call

    async def _send_param_stream(self, call: _OutCall, items: AsyncIterable[Any]) -> None:
        assert call.param_credit is not None
        try:
            async for item in items:
                if call.param_stop.is_set() or call.id not in self._out:
                    return
                await call.param_credit.wait_positive()
                if call.param_stop.is_set() or call.id not in self._out:
                    return
                payload = Envelope(DATA, id=call.id, body=self.codec.encode(item))
                call.param_credit.value -= len(payload.encode())
                self._send(payload)
                await self._flush()
            if call.id in self._out and not call.param_stop.is_set():
                self._send(Envelope(END, id=call.id))
        except asyncio.CancelledError:
            raise
        except Exception as err:  # the local param source failed: tell the handler
            if call.id in self._out:
                self._send(Envelope(ERROR, id=call.id, body=json_body(error_to_wire(err))))

    async def notify(self, method: str, param: Any = None) -> None:
        """Sends a notification (no reply)."""
        self._check_open()
        self._send(Envelope(NOTIFY, method=method, body=self.codec.encode(param)))
        await self._flush()

    async def ping(self, timeout: float = 5.0) -> None:
        """Sends PING and waits for the matching PONG."""
        nonce = self._next_nonce
        self._next_nonce += 1
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pings[nonce] = fut
        self._send(Envelope(PING, id=nonce))
        try:
            await asyncio.wait_for(fut, timeout)
        finally:
            self._pings.pop(nonce, None)

    # ---- reading ---------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                payload = await read_frame(self._reader, self.options.max_frame_bytes)
                if payload is None:
                    await self._abort(ConnectionClosedError("peer closed"))
                    return
                await self._dispatch(decode_envelope(payload), len(payload))
        except ProtocolError as err:
            await self._fail_protocol(err)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, OSError) as err:
            await self._abort(ConnectionClosedError(f"transport error: {err}"))

    async def _dispatch(self, env: Envelope, size: int) -> None:
        self.log(f"recv {env.describe()}")
        kind = env.kind
        if kind == HELLO:
            raise ProtocolError("HELLO after the handshake")
        if kind == GOODBYE:
            self._received_goodbye.set()
            self._send_goodbye({"reason": "goodbye acknowledged"})
            await self._flush()
            body = parse_json_body(env.body or b"{}", "GOODBYE")
            if isinstance(body, dict) and body.get("code") == "protocol_error":
                self.log(f"peer reported a protocol error: {body.get('reason')}")
        elif kind == PING:
            self._send(Envelope(PONG, id=env.id))
            await self._flush()
        elif kind == PONG:
            fut = self._pings.get(env.id)
            if fut and not fut.done():
                fut.set_result(None)
        elif kind == NOTIFY:
            self._on_notify(env)
        elif kind == CALL:
            if env.r:
                raise ProtocolError("CALL with the R flag set")
            await self._on_call(env)
        elif env.r:
            self._on_frame_for_our_call(env, size)
        else:
            await self._on_frame_for_their_call(env, size)

    def _on_notify(self, env: Envelope) -> None:
        try:
            param = self.codec.decode(env.body)
        except ValueError as err:
            self.log(f"dropping NOTIFY {env.method}: undecodable param ({err})")
            return
        if self.on_notify:
            result = self.on_notify(env.method, param)
            if inspect.isawaitable(result):
                asyncio.ensure_future(result)

    def _on_frame_for_our_call(self, env: Envelope, size: int) -> None:
        """Frames with R=1 refer to a call we started."""
        call = self._out.get(env.id)
        if call is None:
            if env.id in self._finished_out or env.kind in (CANCEL, CREDIT):
                return  # a late frame for a call we cancelled or finished: a normal race
            if env.id >= self._next_id:
                raise ProtocolError(f"{env.describe()} for id {env.id} we never issued")
            raise ProtocolError(f"{env.describe()} for call {env.id} that already finished")
        kind = env.kind
        if kind == RESULT:
            if call.stream is not None:
                raise ProtocolError(f"RESULT for stream call {env.id}")
            call.result.set_result(self._decode_or_error(env.body))
            self._finish_out(env.id)
        elif kind == ERROR:
            err = error_from_wire(parse_json_body(env.body, "ERROR"))
            if call.stream is not None:
                call.stream.fail(err)
            if not call.result.done():
                call.result.set_exception(err)
            self._finish_out(env.id)
        elif kind == DATA:
            if call.stream is None:
                raise ProtocolError(f"DATA for call {env.id}, which has no result stream")
            call.stream.push(self._decode_or_error(env.body), size)
        elif kind == END:
            if call.stream is None:
                raise ProtocolError(f"END for call {env.id}, which has no result stream")
            call.stream.end()
            call.result.set_result(None)
            self._finish_out(env.id)
        elif kind == CREDIT:
            if call.param_credit is not None:
                call.param_credit.grant(env.credit)
        elif kind == CANCEL:
            call.param_stop.set()
            if call.param_credit is not None:
                call.param_credit.grant(1)  # wake a sender waiting for credit, so it stops
        else:
            raise ProtocolError(f"unexpected {env.describe()}")

    def _decode_or_error(self, body: bytes) -> Any:
        try:
            return self.codec.decode(body)
        except ValueError as err:
            raise ProtocolError(f"undecodable {self.codec.name} body: {err}") from None

    def _finish_out(self, call_id: int, cancelled: bool = False) -> None:
        call = self._out.pop(call_id, None)
        if call is None:
            return
        if cancelled:
            self._finished_out.add(call_id)
        if call.param_task and not call.param_task.done() and not cancelled:
            call.param_stop.set()
        elif call.param_task and cancelled:
            call.param_task.cancel()
        if call.stream is not None and not call.stream.finished:
            call.stream.fail(ConnectionClosedError("call cancelled"))
        if not call.result.done():
            call.result.cancel()
        if self._call_slots is not None:
            self._call_slots.release()

    async def _on_frame_for_their_call(self, env: Envelope, size: int) -> None:
        """Frames with R=0 (other than CALL) refer to a call the peer started."""
        incoming = self._in.get(env.id)
        if incoming is None:
            if env.kind in (CANCEL, CREDIT):
                return  # races with a finished call are normal
            raise ProtocolError(f"{env.describe()} for unknown or finished call {env.id}")
        kind = env.kind
        if kind == CANCEL:
            body = parse_json_body(env.body, "CANCEL") if env.body else {}
            incoming.ctx.cancel_reason = body.get("reason") if isinstance(body, dict) else None
            incoming.ctx.cancelled.set()
            if incoming.task:
                incoming.task.cancel()
        elif kind == CREDIT:
            if incoming.result_credit is not None:
                incoming.result_credit.grant(env.credit)
        elif kind in (DATA, END, ERROR):
            stream = incoming.param_stream
            if stream is None:
                raise ProtocolError(f"{env.describe()}: call {env.id} has no param stream")
            if stream.finished:
                return  # the handler stopped reading (we sent CANCEL R=1); late items
            if kind == DATA:
                stream.push(self._decode_or_error(env.body), size)
            elif kind == END:
                stream.end()
            else:
                stream.fail(error_from_wire(parse_json_body(env.body, "ERROR")))
        else:
            raise ProtocolError(f"unexpected {env.describe()}")

    # ---- serving calls ---------------------------------------------------------------------

    async def _on_call(self, env: Envelope) -> None:
        if env.id in self._in:
            raise ProtocolError(f"CALL with duplicate active id {env.id}")
        if env.flags & ~FLAG_STREAM_PARAM:
            raise ProtocolError(f"CALL flags 0x{env.flags:x} has unknown bits")
        if len(self._in) >= self.options.max_in_flight:
            self._send_error(env.id, RemoteError(
                f"more than {self.options.max_in_flight} calls in flight",
                name="ConduitError", code="too_many_calls"))
            return
        ctx = CallContext(self, env.id, env.method)
        incoming = _InCall(ctx)
        self._in[env.id] = incoming
        handler = self.handlers.get(env.method)
        if handler is None:
            self._finish_in(env.id, error=RemoteError(
                f"method {env.method!r} not found", name="MethodNotFoundError",
                code="method_not_found"))
            return
        if env.flags & FLAG_STREAM_PARAM:
            incoming.param_stream = _InStream(self, env.id, r_flag_for_credit=True)
            param: Any = incoming.param_stream
        else:
            try:
                param = self.codec.decode(env.body)
            except ValueError as err:
                self._finish_in(env.id, error=RemoteError(
                    f"param of {env.method!r} is not valid {self.codec.name}: {err}",
                    name="ConduitError", code="invalid_param"))
                return
        incoming.task = asyncio.create_task(self._run_handler(incoming, handler, param))
        if env.timeout_ms:
            asyncio.get_running_loop().call_later(
                env.timeout_ms / 1000, self._deadline, incoming)

    def _deadline(self, incoming: _InCall) -> None:
        if self._in.get(incoming.ctx.id) is incoming and incoming.task:
            incoming.ctx.cancel_reason = "deadline exceeded"
            incoming.ctx.cancelled.set()
            incoming.task.cancel()

    async def _run_handler(self, incoming: _InCall, handler: Handler, param: Any) -> None:
        ctx = incoming.ctx
        try:
            if inspect.isasyncgenfunction(handler):
                incoming.result_credit = _Credit(int(self.remote_hello["streamWindowBytes"]))
                generator = handler(param, ctx)
                try:
                    async for item in generator:
                        await incoming.result_credit.wait_positive()
                        data = Envelope(DATA, r=True, id=ctx.id, body=self.codec.encode(item))
                        incoming.result_credit.value -= len(data.encode())
                        self._send(data)
                        await self._flush()
                finally:
                    await generator.aclose()
                self._finish_in(ctx.id, end=True)
            else:
                value = handler(param, ctx)
                if inspect.isawaitable(value):
                    value = await value
                self._finish_in(ctx.id, value=value)
        except asyncio.CancelledError:
            self._finish_in(ctx.id, cancelled=True)
        except Exception as err:
            self._finish_in(ctx.id, error=err)
        await self._flush()

    def _finish_in(self, call_id: int, *, value: Any = None, end: bool = False,
                   error: BaseException | None = None, cancelled: bool = False) -> None:
        incoming = self._in.pop(call_id, None)
        if incoming is None:
            return
        stream = incoming.param_stream
        if stream is not None and not stream.finished:
            # The handler is done before the caller's param stream: tell it to stop sending.
            stream.fail(ConnectionClosedError("handler finished"))
            self._send(Envelope(CANCEL, r=True, id=call_id))
        if cancelled:
            return  # the caller cancelled: nothing more goes out for this id
        if error is not None:
            self._send_error(call_id, error)
        elif end:
            self._send(Envelope(END, r=True, id=call_id))
        else:
            self._send(Envelope(RESULT, r=True, id=call_id, body=self.codec.encode(value)))

    def _send_error(self, call_id: int, err: BaseException) -> None:
        self._send(Envelope(ERROR, r=True, id=call_id, body=json_body(error_to_wire(err))))


# --------------------------------------------------------------------------------------------
# Connecting

async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Binary stdin/stdout as asyncio streams (the child side of a stdio transport)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**31)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, sys.stdout.buffer)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer


async def unix_streams(path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(path, limit=2**31)


async def socket_streams(sock: socket.socket) -> tuple[asyncio.StreamReader,
                                                        asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(sock=sock, limit=2**31)


AsyncHandler = Callable[[Any, CallContext], Awaitable[Any]]
