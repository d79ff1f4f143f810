"""A conduit wire protocol v1 peer in Python 3, standard library only.

Written from docs/protocol.md (section numbers below refer to it) to prove that the spec alone
is enough to talk to conduit. It is an interop test peer: readable first, fast enough for tests.

Layers, bottom to top:
  frames     4-byte big-endian length + payload              read_frame / frame_bytes    (§2)
  varints    unsigned LEB128, minimal, <= 8 bytes, <= 2^53-1  encode_varint / decode_varint (§3)
  envelope   type byte (kind | R flag), fields, body          Envelope / decode_envelope  (§4)
  body       codec bytes (json; msgpack when installed), or UTF-8 JSON for control frames
  Peer       handshake, calls both ways, notifications, streams with credit, cancellation,
             deadlines, errors, goodbye, ping                                        (§5-§10)

Handlers are `async def handler(param, ctx)`. An async generator function is a result-stream
handler: each `yield` sends one DATA frame. A call whose CALL has the STREAM_PARAM flag gets
an async iterator of the caller's items as `param`. Raise RemoteError to control every field
of the ERROR frame; any other exception is sent with its class name and message.

Call meta (§6): `ctx.headers` is a read-only mapping of the headers the caller sent (empty when
it sent none), beside `ctx.key` and `ctx.attempt`; `peer.call(..., headers={...})` sends
headers, and raises CallMetaError before sending when they break §6's limits.

Handlers start in frame order (§6): a call handler starts as an asyncio task and a
notification handler through `call_soon`, both first in, first out on the event loop.

Python has one "nothing" where JavaScript has two: None is sent as an empty body ("no value",
§4), and an empty body decodes to None; JSON `null` also decodes to None.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import inspect
import json
import os
import re
import socket
import sys
from collections import Counter
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, AsyncIterable, AsyncIterator, Callable, Mapping

# --------------------------------------------------------------------------------------------
# Constants (§4, §5)

PROTOCOL = "conduit"
VERSION = 1

HELLO, GOODBYE, PING, PONG = 0x01, 0x02, 0x03, 0x04
AUTH = 0x05  # §5.1: only during the handshake, never decoded as an envelope
CALL, NOTIFY, RESULT, ERROR, CANCEL = 0x10, 0x11, 0x12, 0x13, 0x14
DATA, END, CREDIT = 0x20, 0x21, 0x22

KIND_NAMES = {
    HELLO: "hello", GOODBYE: "goodbye", PING: "ping", PONG: "pong", CALL: "call",
    NOTIFY: "notify", RESULT: "result", ERROR: "error", CANCEL: "cancel", DATA: "data",
    END: "end", CREDIT: "credit",
}
KINDS_BY_NAME = {name: kind for kind, name in KIND_NAMES.items()}

R_FLAG = 0x80
KIND_MASK = 0x7F
FLAG_STREAM_PARAM = 0x01
FLAG_META = 0x02  # §6 call meta: a JSON object after the method (feature "call-meta")
CALL_META_FEATURE = "call-meta"
MAX_CALL_META_BYTES = 4096
MAX_CALL_KEY_LENGTH = 128  # code points
MAX_CALL_HEADERS = 32
MAX_HEADER_NAME_LENGTH = 64
MAX_HEADER_VALUE_LENGTH = 1024
HEADER_NAME = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
HEADER_VALUE = re.compile(r"[\x20-\x7e]{0,1024}")

# Which R values each kind allows, and what follows the type byte.
R_ZERO_ONLY = {HELLO, GOODBYE, PING, PONG, CALL, NOTIFY}
R_ONE_ONLY = {RESULT}
WITH_ID = {RESULT, ERROR, CANCEL, DATA, END, CREDIT}
WITHOUT_BODY = {PING, PONG, END, CREDIT}

MAX_SAFE_INTEGER = 2**53 - 1
MAX_VARINT_BYTES = 8
MAX_METHOD_BYTES = 1024
MAX_CAUSE_DEPTH = 8
MIN_MAX_FRAME_BYTES = 1024  # also the largest HELLO/GOODBYE a peer may send
MAX_HEADER_FRAME_BYTES = 2**32 - 1  # the largest length a frame header can state

DEFAULT_MAX_FRAME_BYTES = 64 * 1024 * 1024
DEFAULT_MAX_IN_FLIGHT = 1024
DEFAULT_STREAM_WINDOW_BYTES = 256 * 1024
DEFAULT_HANDSHAKE_TIMEOUT = 10.0
DEFAULT_DRAIN_TIMEOUT = 5.0


class ProtocolError(Exception):
    """The peer broke the wire protocol (§9)."""


class HandshakeError(Exception):
    """HELLO was missing, malformed or incompatible (§5).

    `code` is the GOODBYE code; `from_peer` says the peer sent it (so we do not answer).
    """

    def __init__(self, message: str, code: str | None = None, from_peer: bool = False) -> None:
        super().__init__(message)
        self.code = code
        self.from_peer = from_peer


class ConnectionClosedError(Exception):
    """The connection closed while something was pending (§10)."""


class CallTimeoutError(asyncio.TimeoutError):
    """Our own deadline for a call passed (we sent CANCEL and gave up waiting)."""


# --------------------------------------------------------------------------------------------
# Varints (§3)

def encode_varint(value: int) -> bytes:
    """Encodes 0..2^53-1 as minimal unsigned LEB128."""
    if not 0 <= value <= MAX_SAFE_INTEGER:
        raise ValueError(f"varint {value} is outside 0..{MAX_SAFE_INTEGER}")
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def decode_varint(buf: bytes, pos: int, what: str = "varint") -> tuple[int, int]:
    """Reads a varint at `pos`; returns (value, next position). Raises ProtocolError."""
    value = 0
    for i in range(MAX_VARINT_BYTES):
        if pos + i >= len(buf):
            raise ProtocolError(f"the frame ends inside the {what} varint")
        byte = buf[pos + i]
        value |= (byte & 0x7F) << (7 * i)
        if not byte & 0x80:
            if byte == 0 and i > 0:
                raise ProtocolError(f"the {what} varint is not minimal (ends in 0x00)")
            if value > MAX_SAFE_INTEGER:
                raise ProtocolError(f"the {what} varint {value} exceeds {MAX_SAFE_INTEGER}")
            return value, pos + i + 1
    raise ProtocolError(f"the {what} varint is longer than {MAX_VARINT_BYTES} bytes")


# --------------------------------------------------------------------------------------------
# Envelope (§4)

@dataclass
class Envelope:
    """One frame payload, decoded. `id` is the nonce for PING/PONG; `r` is the R flag."""

    kind: int
    r: bool = False
    id: int = 0
    flags: int = 0
    timeout_ms: int = 0
    method: str = ""
    credit: int = 0
    body: bytes = b""
    meta: bytes | None = None  # CALL: the meta's bytes, present exactly with FLAG_META

    def encode(self) -> bytes:
        """The frame payload (without the 4-byte length)."""
        out = bytearray([self.kind | (R_FLAG if self.r else 0)])
        if self.kind in (PING, PONG) or self.kind in WITH_ID:
            out += encode_varint(self.id)
        if self.kind == CALL:
            out += encode_varint(self.id) + encode_varint(self.flags)
            out += encode_varint(self.timeout_ms)
        if self.kind in (CALL, NOTIFY):
            method = self.method.encode("utf-8")
            out += encode_varint(len(method)) + method
        if self.kind == CALL and self.flags & FLAG_META:
            out += encode_varint(len(self.meta or b"")) + (self.meta or b"")
        if self.kind == CREDIT:
            out += encode_varint(self.credit)
        out += self.body
        return bytes(out)

    def label(self) -> str:
        """e.g. "CREDIT(R=1)": what the frame is, without its fields."""
        return f"{KIND_NAMES.get(self.kind, f'0x{self.kind:02x}').upper()}(R={int(self.r)})"

    def describe(self) -> str:
        return f"{self.label()} id={self.id}"


def decode_envelope(payload: bytes) -> Envelope:
    """Parses and validates one frame payload. Raises ProtocolError for anything §9 lists."""
    if not payload:
        raise ProtocolError("zero-length frame: no type byte")
    kind = payload[0] & KIND_MASK
    env = Envelope(kind=kind, r=bool(payload[0] & R_FLAG))
    name = KIND_NAMES.get(kind)
    if name is None:
        raise ProtocolError(f"unknown frame kind 0x{kind:02x}")
    if env.r and kind in R_ZERO_ONLY:
        raise ProtocolError(f"{name.upper()} does not allow the R flag")
    if not env.r and kind in R_ONE_ONLY:
        raise ProtocolError(f"{name.upper()} must have the R flag")
    pos = 1
    if kind in (PING, PONG):
        env.id, pos = decode_varint(payload, pos, "nonce")
    if kind in WITH_ID or kind == CALL:
        env.id, pos = decode_varint(payload, pos, "id")
        if env.id == 0:
            raise ProtocolError(f"{name.upper()} for id 0")
    if kind == CALL:
        env.flags, pos = decode_varint(payload, pos, "flags")
        env.timeout_ms, pos = decode_varint(payload, pos, "timeoutMs")
        if env.flags & ~(FLAG_STREAM_PARAM | FLAG_META):
            raise ProtocolError(f"CALL flags 0x{env.flags:x} set bits undefined in version 1")
    if kind in (CALL, NOTIFY):
        env.method, pos = _read_method(payload, pos)
    if kind == CALL and env.flags & FLAG_META:
        length, pos = decode_varint(payload, pos, "metaLength")
        if not 1 <= length <= MAX_CALL_META_BYTES or pos + length > len(payload):
            raise ProtocolError(f"CALL meta of {length} bytes (1 to {MAX_CALL_META_BYTES}, "
                                "within the frame)")
        env.meta, pos = bytes(payload[pos:pos + length]), pos + length
    if kind == CREDIT:
        env.credit, pos = decode_varint(payload, pos, "bytes")
        if env.credit == 0:
            raise ProtocolError("CREDIT granting 0 bytes")
    env.body = bytes(payload[pos:])
    if env.body and kind in WITHOUT_BODY:
        raise ProtocolError(f"{name.upper()} has {len(env.body)} byte(s) after its fields")
    if env.body and kind == CALL and env.flags & FLAG_STREAM_PARAM:
        raise ProtocolError("CALL with STREAM_PARAM must have an empty body")
    return env


def _read_method(payload: bytes, pos: int) -> tuple[str, int]:
    length, pos = decode_varint(payload, pos, "methodLength")
    if not 1 <= length <= MAX_METHOD_BYTES:
        raise ProtocolError(f"method of {length} bytes (allowed: 1 to {MAX_METHOD_BYTES})")
    if pos + length > len(payload):
        raise ProtocolError(f"methodLength {length} runs past the end of the frame")
    try:
        return payload[pos:pos + length].decode("utf-8"), pos + length
    except UnicodeDecodeError:
        raise ProtocolError("the method is not valid UTF-8") from None


# The limits of HELLO (§5) and their lowest values; each may be up to 2^53-1.
HELLO_LIMITS = {"maxFrameBytes": MIN_MAX_FRAME_BYTES, "maxInFlight": 1, "streamWindowBytes": 1}


def _integer(value: Any) -> int | None:
    """A JSON number with an integer value, as an int (§5: 8, 8.0 and 8e0 are the integer 8);
    None for anything else (8.5, "8", true)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def json_body(obj: Any) -> bytes:
    """Control-frame bodies (HELLO, GOODBYE, ERROR, CANCEL) are compact UTF-8 JSON."""
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def parse_json_body(body: bytes, what: str) -> Any:
    try:
        return json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        raise ProtocolError(f"{what} body is not UTF-8 JSON: {err}") from None


# --------------------------------------------------------------------------------------------
# Codecs: the bodies of CALL, NOTIFY, RESULT and DATA (§4 "Bodies and codecs")

class JsonCodec:
    name = "json"

    def encode(self, value: Any) -> bytes:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False,
                          allow_nan=False).encode("utf-8")

    def decode(self, data: bytes) -> Any:
        return json.loads(data.decode("utf-8"))


class MsgpackCodec:
    name = "msgpack"

    def __init__(self) -> None:
        import conduit_msgpack as msgpack  # conduit's ext types; needs pip install msgpack
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


class BodyDecodeError(ValueError):
    """A codec body that does not decode (reported as invalid_param, or fails one call)."""


def encode_value(codec: JsonCodec | MsgpackCodec, value: Any) -> bytes:
    """None is "no value": an empty body (§4)."""
    return b"" if value is None else codec.encode(value)


def decode_value(codec: JsonCodec | MsgpackCodec, body: bytes) -> Any:
    if not body:
        return None
    try:
        return codec.decode(body)
    except Exception as err:  # each codec library raises its own exception types
        raise BodyDecodeError(f"{codec.name} body of {len(body)} bytes does not decode: "
                              f"{err}") from None


# --------------------------------------------------------------------------------------------
# Errors on the wire (§8)

class RemoteError(Exception):
    """An error as it travels: name, message, code, data, stack and cause (a RemoteError)."""

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
    """An exception and its cause chain (at most 8 levels) as an ERROR body object."""
    if isinstance(err, FrameTooLargeError):  # §7, §8: a result or stream item too big
        err = RemoteError(str(err), name="FrameTooLargeError", code="frame_too_large")
    if isinstance(err, RemoteError):
        obj: dict[str, Any] = {"name": err.name, "message": err.message}
        for key in ("code", "data", "stack"):
            if getattr(err, key) is not None:
                obj[key] = getattr(err, key)
        cause: BaseException | None = err.cause or err.__cause__
    else:
        obj = {"name": type(err).__name__, "message": str(err)}
        cause = err.__cause__
    if cause is not None and depth + 1 < MAX_CAUSE_DEPTH:
        obj["cause"] = error_to_wire(cause, depth + 1)
    return obj


def error_body(err: BaseException, max_bytes: int, call_id: int) -> bytes:
    """The ERROR body about `call_id` for a receiver whose frames are at most `max_bytes`."""
    return fit_error(error_to_wire(err), max_bytes - 1 - len(encode_varint(call_id)))


def fit_error(obj: dict[str, Any], room: int) -> bytes:
    """§8's shrinking, each step only while the body exceeds `room` bytes: stacks at every level,
    data at every level, causes one level at a time from the deepest, the end of the message
    (marked "…"), the code, the end of the name."""
    def fits() -> bool:
        return len(json_body(obj)) <= room

    levels = [obj]
    while isinstance(levels[-1].get("cause"), dict):
        levels.append(levels[-1]["cause"])
    if fits():
        return json_body(obj)
    for field in ("stack", "data"):
        for level in levels:
            level.pop(field, None)
        if fits():
            return json_body(obj)
    while len(levels) > 1:
        levels.pop()
        levels[-1].pop("cause", None)
        if fits():
            return json_body(obj)
    _shorten(obj, "message", "\u2026", fits)
    if fits():
        return json_body(obj)
    obj.pop("code", None)
    if fits():
        return json_body(obj)
    _shorten(obj, "name", "", fits)
    return json_body(obj)


def _shorten(obj: dict[str, Any], key: str, mark: str, fits: Any) -> None:
    """obj[key] becomes its longest start (whole code points, shorter than it is) that fits
    followed by `mark`, or "" when none does."""
    text = obj[key]
    low, high = -1, len(text) - 1
    while low < high:
        mid = (low + high + 1) // 2
        obj[key] = text[:mid] + mark
        if fits():
            low = mid
        else:
            high = mid - 1
    obj[key] = "" if low < 0 else text[:low] + mark


def error_from_wire(obj: Any, depth: int = 0) -> RemoteError:
    """An ERROR body object as a RemoteError. §8 requires name and message but §9 does not make
    a malformed error a protocol error, so (like conduit) a bad one becomes a generic error."""
    if not isinstance(obj, dict):
        return RemoteError("the peer sent a malformed error", data=obj)
    cause = None
    if isinstance(obj.get("cause"), dict) and depth + 1 < MAX_CAUSE_DEPTH:
        cause = error_from_wire(obj["cause"], depth + 1)
    name, message = obj.get("name"), obj.get("message")
    code, stack = obj.get("code"), obj.get("stack")
    return RemoteError(message if isinstance(message, str) else "",
                       name=name if isinstance(name, str) else "Error",
                       code=code if isinstance(code, str) else None, data=obj.get("data"),
                       stack=stack if isinstance(stack, str) else None, cause=cause)


def parse_error_body(body: bytes) -> RemoteError:
    try:
        return error_from_wire(json.loads(body.decode("utf-8")))
    except (UnicodeDecodeError, ValueError):
        return RemoteError("the peer sent a malformed error", data=body[:200].hex())


# --------------------------------------------------------------------------------------------
# Frames on a byte stream (§2)

async def read_frame(reader: asyncio.StreamReader, max_frame_bytes: int) -> bytes | None:
    """Reads one frame payload; None on EOF between frames. The length is checked first."""
    try:
        header = await reader.readexactly(4)
    except asyncio.IncompleteReadError as err:
        if not err.partial:
            return None
        raise ConnectionClosedError("the stream ended inside a frame header") from None
    length = int.from_bytes(header, "big")
    if length == 0:
        raise ProtocolError("zero-length frame: no type byte")
    if length > max_frame_bytes:
        raise ProtocolError(f"frame of {length} bytes exceeds maxFrameBytes ({max_frame_bytes})")
    try:
        return await reader.readexactly(length)
    except asyncio.IncompleteReadError as err:
        raise ConnectionClosedError(f"the stream ended mid-frame: "
                                    f"{length - len(err.partial)} more byte(s) expected") from None


def frame_bytes(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


# --------------------------------------------------------------------------------------------
# Stream state (§7)

class _Credit:
    """The producer's side of one stream: send while credit > 0, then wait for CREDIT."""

    def __init__(self, window: int) -> None:
        self.value = window
        self.stopped = False
        self._changed = asyncio.Event()

    def grant(self, amount: int) -> None:
        self.value += amount
        self._changed.set()

    def stop(self) -> None:
        self.stopped = True
        self._changed.set()

    async def wait(self) -> bool:
        """Waits for credit > 0; False once the stream was stopped (CANCEL or terminal)."""
        while self.value <= 0 and not self.stopped:
            self._changed.clear()
            await self._changed.wait()
        return not self.stopped


_END = object()


class _InStream:
    """The consumer's side of one stream: a queue of items, with credit granted back."""

    def __init__(self, peer: Peer, call_id: int, credit_r: bool) -> None:
        self._peer = peer
        self._id = call_id
        self._credit_r = credit_r  # CREDIT(R=0) for our result stream, R=1 for a param stream
        self._window = peer.options.stream_window_bytes
        self._queue: asyncio.Queue[Any] = asyncio.Queue()
        self._available = self._window  # window + granted - received, as §7 tracks it
        self._consumed = 0
        self.state = "open"  # open -> ended (END/ERROR received) or abandoned (we stopped it)

    def push(self, body: bytes, cost: int) -> None:
        if self.state == "abandoned":
            return  # crossed our CANCEL or the terminal frame on the wire
        if self.state == "ended":
            raise ProtocolError(f"DATA after the end of stream {self._id}")
        if self._available <= 0:
            raise ProtocolError(f"DATA beyond the credit of stream {self._id} "
                                f"({self._available} bytes left)")
        self._available -= cost
        self._queue.put_nowait((body, cost))

    def end(self, error: BaseException | None = None) -> None:
        if self.state == "ended":  # §7: a stream ends once
            raise ProtocolError(f"END or ERROR after the end of stream {self._id}")
        if self.state == "open":
            self.state = "ended"
            self._queue.put_nowait(error or _END)

    def abandon(self, error: BaseException) -> None:
        if self.state != "abandoned":
            self.state = "abandoned"
            self._queue.put_nowait(error)

    def __aiter__(self) -> _InStream:
        return self

    async def __anext__(self) -> Any:
        entry = await self._queue.get()
        if entry is _END:
            self._queue.put_nowait(_END)  # keep answering StopAsyncIteration
            raise StopAsyncIteration
        if isinstance(entry, BaseException):
            self._queue.put_nowait(entry)
            raise entry
        body, cost = entry
        self._consumed += cost
        if self.state == "open" and self._consumed >= self._window // 2:
            grant, self._consumed = self._consumed, 0
            self._available += grant
            self._peer._send(Envelope(CREDIT, r=self._credit_r, id=self._id, credit=grant))
        return decode_value(self._peer.codec, body)


# --------------------------------------------------------------------------------------------
# The peer

@dataclass
class PeerOptions:
    codec: str = "json"
    max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES
    max_in_flight: int = DEFAULT_MAX_IN_FLIGHT
    stream_window_bytes: int = DEFAULT_STREAM_WINDOW_BYTES
    handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT
    drain_timeout: float = DEFAULT_DRAIN_TIMEOUT
    # §11: the extensions this peer reads; call meta (§6) by default.
    features: list[str] = field(default_factory=lambda: [CALL_META_FEATURE])
    # §5.1: a shared secret the peer must prove it holds (bytes; None: no authentication).
    secret: bytes | None = None
    # §5.1: "initiator" for the side that opened the connection, "responder" for the side that
    # accepted it (it answers only a proof it has checked).
    role: str = "initiator"

    def __post_init__(self) -> None:
        # §5.1: a secret short enough to guess is refused where it is set, not on the wire.
        if self.secret is not None and len(self.secret) < MIN_SECRET_BYTES:
            raise ValueError(f"secret is {len(self.secret)} bytes, under {MIN_SECRET_BYTES}: "
                             "use random bytes, e.g. secrets.token_bytes(32)")


# ---- authentication (§5.1) -------------------------------------------------------------------

AUTH_METHOD = "hmac-sha256-v2"
RETIRED_AUTH_METHOD = "hmac-sha256"  # the first handshake: refused by name
AUTH_LABEL = b"conduit-auth-v2"
AUTH_NONCE_BYTES = 32
MIN_SECRET_BYTES = 16  # 128 bits: a proof lets guesses of the secret be tested offline
AUTH_ROLES = ("initiator", "responder")


def auth_transcript(initiator_hello: bytes, responder_hello: bytes) -> bytes:
    """len16(initiator's HELLO body) || it || len16(responder's HELLO body) || it."""
    return b"".join(len(hello).to_bytes(2, "big") + hello
                    for hello in (initiator_hello, responder_hello))


def auth_proof(secret: bytes, role: str, transcript: bytes) -> bytes:
    """HMAC-SHA-256(secret, "conduit-auth-v2" 0x00 role 0x00 || transcript)."""
    message = AUTH_LABEL + b"\0" + role.encode() + b"\0" + transcript
    return hmac.new(secret, message, hashlib.sha256).digest()


def parse_nonce(value: Any) -> bytes | None:
    """HELLO's auth.nonce: exactly 64 lowercase hex digits."""
    if not isinstance(value, str) or not re.fullmatch(r"[0-9a-f]{64}", value):
        return None
    return bytes.fromhex(value)


class CallMetaError(ValueError):
    """Our own call's `key`, `attempt` or `headers` break §6's limits: raised by `Peer.call`
    before anything is sent. `option` names the argument at fault."""

    def __init__(self, method: str, option: str, problem: str) -> None:
        super().__init__(f"call to {method!r}: option {option!r}: {problem}")
        self.method = method
        self.option = option


def call_meta_problem(key: Any, attempt: Any, headers: Any) -> tuple[str, str] | None:
    """§6: what is wrong with a meta's `key`, `attempt` or `headers` (each None when absent),
    as (member, problem); None when all three are of their form."""
    if headers is not None:
        if not isinstance(headers, dict):
            return "headers", "must be an object of strings"
        if len(headers) > MAX_CALL_HEADERS:
            return "headers", f"{len(headers)} headers, at most {MAX_CALL_HEADERS}"
        for name, value in headers.items():
            if not isinstance(name, str) or not HEADER_NAME.fullmatch(name):
                return "headers", (f"header name {str(name)[:70]!r} is not 1 to "
                                   f"{MAX_HEADER_NAME_LENGTH} of a-z, 0-9, '-', '_' and '.' "
                                   "starting with a lowercase letter or a digit")
            if not isinstance(value, str) or not HEADER_VALUE.fullmatch(value):
                return "headers", (f"header {name!r} must be a string of 0 to "
                                   f"{MAX_HEADER_VALUE_LENGTH} printable ASCII characters "
                                   "(0x20 to 0x7e)")
    if key is not None and (not isinstance(key, str)
                            or not 1 <= len(key) <= MAX_CALL_KEY_LENGTH):
        return "key", f"must be a string of 1 to {MAX_CALL_KEY_LENGTH} characters"
    if attempt is not None and not 1 <= (_integer(attempt) or 0) <= MAX_SAFE_INTEGER:
        return "attempt", f"must be an integer from 1 to 2^53 - 1, not {attempt!r}"
    return None


def call_meta_body(method: str, key: str | None = None, attempt: int | None = None,
                   headers: dict[str, str] | None = None) -> bytes | None:
    """§6: the meta of our call to `method` as compact UTF-8 JSON (members only when given,
    `headers` only when it has one), or None when there is nothing to send. Raises
    CallMetaError when a member breaks the spec's limits or the whole exceeds 4096 bytes."""
    problem = call_meta_problem(key, attempt, headers)
    if problem is not None:
        raise CallMetaError(method, *problem)
    obj: dict[str, Any] = {}
    if key is not None:
        obj["key"] = key
    if attempt is not None:
        obj["attempt"] = _integer(attempt)
    if headers:
        obj["headers"] = headers
    if not obj:
        return None
    body = json_body(obj)
    if len(body) > MAX_CALL_META_BYTES:
        raise CallMetaError(method, "headers" if headers else "key",
                            f"the meta (key, attempt and headers) is {len(body)} bytes of "
                            f"JSON, over {MAX_CALL_META_BYTES}")
    return body


def parse_call_meta(meta: bytes | None) -> dict[str, Any] | None:
    """§6: a CALL's meta, a JSON object whose `key` (1 to 128 characters), `attempt` (an
    integer >= 1) and `headers` (at most 32 names of a-z 0-9 - _ . to printable ASCII strings)
    are checked; a malformed one is a protocol error. Unknown members are ignored."""
    if meta is None:
        return None
    try:
        obj = json.loads(meta.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ProtocolError("a CALL's meta is not UTF-8 JSON") from None
    if not isinstance(obj, dict):
        raise ProtocolError("a CALL's meta is not a JSON object")
    problem = call_meta_problem(obj.get("key"), obj.get("attempt"), obj.get("headers"))
    if problem is not None:
        raise ProtocolError(f"a CALL's meta {problem[0]}: {problem[1]}")
    if obj.get("attempt") is not None:
        obj["attempt"] = _integer(obj["attempt"])  # 2.0 is the integer 2 in JSON
    return obj


class CallContext:
    """What a handler knows of its call; `cancelled` is set on CANCEL, deadline or close."""

    def __init__(self, peer: Peer, call_id: int, method: str, timeout_ms: int,
                 meta: dict[str, Any] | None = None) -> None:
        self.peer = peer
        self.id = call_id
        self.method = method
        self.timeout_ms = timeout_ms
        # §6 call meta: the caller's stable key for the call, which attempt this is, and the
        # strings it attached by name (a read-only mapping, empty when it sent none).
        self.key: str | None = (meta or {}).get("key")
        self.attempt: int = (meta or {}).get("attempt", 1)
        self.headers: Mapping[str, str] = MappingProxyType(dict((meta or {}).get("headers")
                                                                or {}))
        self.cancelled = asyncio.Event()
        self.cancel_reason: str | None = None


class _OutCall:
    """A call we started. It stays registered until its terminal frame (§6)."""

    def __init__(self, call_id: int, method: str, stream: _InStream | None) -> None:
        self.id = call_id
        self.method = method
        self.result: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self.result.add_done_callback(_retrieve)
        self.stream = stream
        self.saw_data = False
        self.cancelled = False  # we sent CANCEL: drop DATA/RESULT until the terminal frame
        self.param_credit: _Credit | None = None
        self.param_task: asyncio.Task[None] | None = None


class _InCall:
    """A call the peer started, until we send its terminal frame."""

    def __init__(self, ctx: CallContext) -> None:
        self.ctx = ctx
        self.task: asyncio.Task[None] | None = None
        self.param_stream: _InStream | None = None
        self.result_credit: _Credit | None = None
        self.deadline: asyncio.TimerHandle | None = None
        self.stop_error: RemoteError | None = None  # set by CANCEL(R=0) or the deadline


def _retrieve(fut: asyncio.Future[Any]) -> None:
    """Marks a future's exception as seen: its caller may have given up on it already."""
    if not fut.cancelled():
        fut.exception()


class Peer:
    """One end of a conduit connection over an asyncio (reader, writer) pair."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                 handlers: dict[str, Callable[..., Any]] | None = None,
                 on_notify: Callable[[str, Any], Any] | None = None,
                 options: PeerOptions | None = None, name: str = "py") -> None:
        self.options = options or PeerOptions()
        self.codec = make_codec(self.options.codec)
        self.handlers = dict(handlers or {})
        self.on_notify = on_notify
        self.name = name
        self.remote_hello: dict[str, Any] = {}
        self.stats: Counter[str] = Counter()  # frames by "sent KIND(R=x)" / "received ..."
        self._reader = reader
        self._writer = writer
        self._next_id = 1
        self._next_nonce = 1
        self._max_remote_id = 0
        self._out: dict[int, _OutCall] = {}
        self._in: dict[int, _InCall] = {}
        self._pings: dict[int, asyncio.Future[None]] = {}
        self._call_slots: asyncio.Semaphore | None = None
        self._background: set[asyncio.Task[Any]] = set()
        self._sent_goodbye = False
        self._received_goodbye = asyncio.Event()
        self._goodbye_reason: str | None = None
        self._idle = asyncio.Event()
        self._closed = asyncio.Event()  # set when closing starts
        self._released = asyncio.Event()  # set once the transport is closed
        self._read_task: asyncio.Task[None] | None = None
        self._auth_nonce = (os.urandom(AUTH_NONCE_BYTES)
                            if self.options.secret is not None else None)

    def log(self, message: str) -> None:
        if os.environ.get("CONDUIT_PY_DEBUG"):
            print(f"[{self.name}] {message}", file=sys.stderr, flush=True)

    # ---- handshake (§5) --------------------------------------------------------------------

    async def start(self) -> None:
        """Sends HELLO, waits for the peer's, checks it, then starts serving."""
        hello = {
            "protocol": PROTOCOL, "version": VERSION, "codec": self.codec.name,
            "maxFrameBytes": self.options.max_frame_bytes,
            "maxInFlight": self.options.max_in_flight,
            "streamWindowBytes": self.options.stream_window_bytes,
            "features": self.options.features,
        }
        if self._auth_nonce is not None:
            hello["auth"] = {"method": AUTH_METHOD, "nonce": self._auth_nonce.hex(),
                             "role": self.options.role}
        body = json_body(hello)
        self._hello_body = body
        if len(body) >= MIN_MAX_FRAME_BYTES:  # §2: a HELLO frame is at most 1024 bytes
            raise ValueError(f"our HELLO would be {len(body) + 1} bytes (at most "
                             f"{MIN_MAX_FRAME_BYTES}): too many or too long features")
        self._send(Envelope(HELLO, body=body))
        try:
            remote = await asyncio.wait_for(self._receive_hello(),
                                            self.options.handshake_timeout)
        except asyncio.TimeoutError:
            err = HandshakeError(
                f"no HELLO within the handshake timeout ({self.options.handshake_timeout} s)",
                "handshake_timeout")
            self._send_goodbye({"code": err.code, "reason": str(err)})
            await self._abort(err)
            raise err from None
        except HandshakeError as err:
            if err.code and not err.from_peer:
                self._send_goodbye({"code": err.code, "reason": str(err)})
            await self._abort(err)
            raise
        self.remote_hello = remote
        self._call_slots = asyncio.Semaphore(remote["maxInFlight"])
        self._read_task = asyncio.create_task(self._read_loop())
        self.log(f"handshake done: {remote}")

    async def _receive_hello(self) -> dict[str, Any]:
        try:
            # §2: before the handshake the limit is 1024 bytes, whatever we announced.
            payload = await read_frame(self._reader, MIN_MAX_FRAME_BYTES)
            if payload is None:
                raise HandshakeError("the peer closed the connection before its HELLO")
            env = decode_envelope(payload)
        except (ProtocolError, ConnectionClosedError) as err:
            raise HandshakeError(f"bad first frame: {err}", "protocol_error") from err
        if env.kind == GOODBYE:
            body = _goodbye_fields(env.body)
            raise HandshakeError(f"the peer said GOODBYE during the handshake: "
                                 f"{body.get('code')}: {body.get('reason')}",
                                 body.get("code"), from_peer=True)
        if env.kind != HELLO:
            raise HandshakeError(f"the first frame is {env.describe()}, not HELLO",
                                 "protocol_error")
        try:
            remote = parse_json_body(env.body, "HELLO")
        except ProtocolError as err:  # §5 check 1: not a conduit HELLO
            raise HandshakeError(str(err), "protocol_mismatch") from None
        problem = self._check_hello(remote)
        if problem:
            raise HandshakeError(problem[1], problem[0])
        limits = {name: _integer(remote[name]) for name in HELLO_LIMITS}
        limits["maxFrameBytes"] = min(limits["maxFrameBytes"], MAX_HEADER_FRAME_BYTES)
        await self._authenticate(remote, env.body)
        return {**remote, **limits}

    async def _authenticate(self, remote: dict[str, Any], remote_body: bytes) -> None:
        """§5.1: the initiator proves itself first; the responder answers only a checked proof."""
        offered = remote.get("auth")
        if self.options.secret is None or self._auth_nonce is None:
            if offered is not None:
                raise HandshakeError("the peer requires authentication and we have no secret",
                                     "auth_required")
            return
        if not isinstance(offered, dict):
            raise HandshakeError("we require authentication and the peer offered none",
                                 "auth_required")
        if offered.get("method") == RETIRED_AUTH_METHOD:
            raise HandshakeError(f"the peer offered the retired method {RETIRED_AUTH_METHOD!r}: "
                                 "upgrade it", "auth_failed")
        if offered.get("method") != AUTH_METHOD:
            raise HandshakeError(f"the peer offered auth method {offered.get('method')!r}",
                                 "auth_failed")
        peer_nonce = parse_nonce(offered.get("nonce"))
        if peer_nonce is None:
            raise HandshakeError("the peer's nonce is not 64 lowercase hex digits", "auth_failed")
        if hmac.compare_digest(peer_nonce, self._auth_nonce):
            raise HandshakeError("the peer's nonce is our own (a reflection)", "auth_failed")
        role = self.options.role
        peer_role = offered.get("role")
        if peer_role not in AUTH_ROLES or peer_role == role:
            raise HandshakeError(f"the peer's role is {peer_role!r} and ours {role!r}",
                                 "auth_failed")
        secret = self.options.secret
        transcript = (auth_transcript(self._hello_body, remote_body) if role == "initiator"
                      else auth_transcript(remote_body, self._hello_body))
        if role == "initiator":
            self._writer.write(frame_bytes(bytes([AUTH]) + auth_proof(secret, role, transcript)))
        try:
            payload = await read_frame(self._reader, MIN_MAX_FRAME_BYTES)
        except (ProtocolError, ConnectionClosedError) as err:
            raise HandshakeError(f"bad frame in the auth step: {err}", "protocol_error") from err
        if payload is None:
            raise HandshakeError("the peer closed the connection before its AUTH")
        if payload[0] == GOODBYE:
            body = _goodbye_fields(payload[1:])
            raise HandshakeError(f"the peer said GOODBYE during authentication: "
                                 f"{body.get('code')}: {body.get('reason')}",
                                 body.get("code"), from_peer=True)
        if payload[0] != AUTH or len(payload) != 33:
            raise HandshakeError(f"the peer sent type 0x{payload[0]:02x} ({len(payload)} bytes) "
                                 "where its AUTH belonged", "auth_failed")
        expected = auth_proof(secret, peer_role, transcript)
        if not hmac.compare_digest(payload[1:], expected):
            raise HandshakeError("the peer's proof does not match our secret", "auth_failed")
        if role == "responder":
            self._writer.write(frame_bytes(bytes([AUTH]) + auth_proof(secret, role, transcript)))

    def _check_hello(self, remote: Any) -> tuple[str, str] | None:
        """The checks of §5, in the order §5 gives them."""
        if not isinstance(remote, dict):  # not a conduit HELLO at all
            return "protocol_mismatch", f"HELLO body is {type(remote).__name__}, not an object"
        if remote.get("protocol") != PROTOCOL:
            return ("protocol_mismatch",
                    f"protocol {remote.get('protocol')!r} is not {PROTOCOL!r}")
        if _integer(remote.get("version")) != VERSION:
            return ("version_mismatch",
                    f"version {remote.get('version')!r} differs from ours ({VERSION})")
        if remote.get("codec") != self.codec.name:
            return ("codec_mismatch",
                    f"codec {remote.get('codec')!r} differs from ours ({self.codec.name!r})")
        for name, low in HELLO_LIMITS.items():
            value = _integer(remote.get(name))
            if value is None or not low <= value <= MAX_SAFE_INTEGER:
                return ("invalid_hello", f"HELLO {name} {remote.get(name)!r} is not an integer "
                        f"from {low} to {MAX_SAFE_INTEGER}")
        features = remote.get("features", [])  # optional: absent means []
        if not isinstance(features, list) or not all(isinstance(f, str) for f in features):
            return "invalid_hello", f"HELLO features {features!r} is not an array of strings"
        return None

    # ---- closing (§10) ---------------------------------------------------------------------

    async def close(self, reason: str = "done") -> None:
        """Graceful close: GOODBYE, finish what is in flight, wait for the peer's GOODBYE.
        Safe to call more than once; every call returns once the transport is closed."""
        if self._closed.is_set():
            await self._released.wait()
            return
        self._send_goodbye({"reason": reason})
        await self._flush()
        try:
            await asyncio.wait_for(self._drained(), self.options.drain_timeout)
        except asyncio.TimeoutError:
            self.log("drain timeout: closing abortively")
        await self._abort(ConnectionClosedError("closed"))

    async def serve_until_goodbye(self) -> None:
        """Serves until the peer says GOODBYE or the connection ends, then closes cleanly."""
        closed = asyncio.ensure_future(self._closed.wait())
        bye = asyncio.ensure_future(self._received_goodbye.wait())
        await asyncio.wait({closed, bye}, return_when=asyncio.FIRST_COMPLETED)
        closed.cancel()
        bye.cancel()
        await self.close("the peer said goodbye")

    async def wait_closed(self) -> None:
        """Waits until the connection is closed and its transport released."""
        await self._released.wait()

    @property
    def closed(self) -> bool:
        return self._closed.is_set()

    async def _drained(self) -> None:
        while not self._closed.is_set():
            if not self._out and not self._in and self._received_goodbye.is_set():
                return
            self._idle.clear()
            await self._idle.wait()

    def _send_goodbye(self, body: dict[str, Any]) -> None:
        if not self._sent_goodbye:
            self._sent_goodbye = True
            encoded = json_body(body)
            while len(encoded) >= MIN_MAX_FRAME_BYTES:  # §2: GOODBYE fits in 1024 bytes
                body["reason"] = body["reason"][: len(body["reason"]) // 2]
                encoded = json_body(body)
            self._send(Envelope(GOODBYE, body=encoded))

    async def _abort(self, err: BaseException) -> None:
        """Closes the transport and settles everything pending with ConnectionClosedError."""
        if self._closed.is_set():
            return
        self._closed.set()
        self._idle.set()
        if isinstance(err, ConnectionClosedError):
            closed = err
        else:
            closed = ConnectionClosedError(f"connection closed: {err}")
            closed.__cause__ = err
        for call in self._out.values():
            if not call.result.done():
                call.result.set_exception(closed)
            if call.stream:
                call.stream.abandon(closed)
            if call.param_credit:
                call.param_credit.stop()
        for incoming in self._in.values():
            incoming.ctx.cancel_reason = "connection closed"
            incoming.ctx.cancelled.set()
            if incoming.param_stream:
                incoming.param_stream.abandon(closed)
            if incoming.task:
                incoming.task.cancel()
        for fut in self._pings.values():
            if not fut.done():
                fut.set_exception(closed)
        self._out.clear()
        self._in.clear()
        self._writer.close()
        try:
            await self._writer.wait_closed()
        except (OSError, ConnectionError):
            pass
        if self._read_task and self._read_task is not asyncio.current_task():
            self._read_task.cancel()
        self._released.set()

    async def _fail_protocol(self, err: ProtocolError) -> None:
        """§9: GOODBYE protocol_error if we can, close, fail everything; never wait."""
        self.log(f"protocol error: {err}")
        self._sent_goodbye = False  # a protocol error GOODBYE goes out even after a normal one
        self._send_goodbye({"code": "protocol_error", "reason": str(err)})
        await self._abort(err)

    # ---- writing ---------------------------------------------------------------------------

    def _send(self, env: Envelope) -> None:
        if self._closed.is_set():
            return
        payload = env.encode()
        limit = self.remote_hello.get("maxFrameBytes", MIN_MAX_FRAME_BYTES)
        if len(payload) > limit:
            raise FrameTooLargeError(
                f"frame of {len(payload)} bytes exceeds the peer's maxFrameBytes ({limit})")
        self.log(f"send {env.describe()} {len(payload)} B")
        self.stats[f"sent {env.label()}"] += 1
        self._writer.write(frame_bytes(payload))

    async def _flush(self) -> None:
        if self._closed.is_set():
            return
        try:
            await self._writer.drain()
        except (ConnectionError, OSError) as err:
            await self._abort(ConnectionClosedError(f"write failed: {err}"))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    # ---- starting calls (§6) ---------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed.is_set():
            raise ConnectionClosedError("the connection is closed")
        if self._sent_goodbye or self._received_goodbye.is_set():
            raise ConnectionClosedError("the connection is closing (GOODBYE)")

    async def call(self, method: str, param: Any = None, *, timeout: float | None = None,
                   param_stream: AsyncIterable[Any] | None = None, key: str | None = None,
                   attempt: int | None = None, headers: Mapping[str, str] | None = None,
                   _raw_meta: bytes | None = None) -> Any:
        """Calls `method` and returns its result; `param_stream` makes it a client stream.

        `key`, `attempt` and `headers` travel in the CALL's meta (§6) and reach the handler
        (conduit: `ctx.key`, `ctx.attempt`, `ctx.headers`); CallMetaError is raised before
        anything is sent when they break §6's limits. The meta is left out towards a peer whose
        HELLO does not list `call-meta`, and when it would take the CALL past the peer's
        maxFrameBytes. `_raw_meta` is for tests: these bytes go out as the meta, unchecked.

        On `timeout` (seconds) or task cancellation it sends CANCEL(R=0) and raises at once;
        the id stays reserved until the handler's terminal frame arrives (§6).
        """
        meta = _raw_meta if _raw_meta is not None else call_meta_body(
            method, key, attempt, None if headers is None else dict(headers))
        call = await self._start_call(method, param, timeout, param_stream, None, meta)
        try:
            return await asyncio.wait_for(asyncio.shield(call.result), timeout)
        except asyncio.TimeoutError:
            self._cancel_out(call, "deadline exceeded", "deadline_exceeded")
            raise CallTimeoutError(f"{method} did not answer within {timeout} s") from None
        except asyncio.CancelledError:
            self._cancel_out(call, "the caller was cancelled")
            raise

    async def call_stream(self, method: str, param: Any = None, *,
                          param_stream: AsyncIterable[Any] | None = None,
                          key: str | None = None, attempt: int | None = None,
                          headers: Mapping[str, str] | None = None) -> AsyncIterator[Any]:
        """Calls a result-stream method and yields its items; stopping early sends CANCEL.
        `key`, `attempt` and `headers` are as for `call`."""
        meta = call_meta_body(method, key, attempt, None if headers is None else dict(headers))
        stream = _InStream(self, self._next_id, credit_r=False)
        call = await self._start_call(method, param, None, param_stream, stream, meta)
        finished = False
        try:
            async for item in stream:
                yield item
            finished = True
        finally:
            if not finished:
                self._cancel_out(call, "the consumer stopped reading")

    async def notify(self, method: str, param: Any = None) -> None:
        """Sends a notification; nothing answers it."""
        self._check_open()
        self._send(Envelope(NOTIFY, method=method, body=encode_value(self.codec, param)))
        await self._flush()

    async def ping(self, timeout: float = 5.0) -> None:
        """Sends PING and waits for its PONG."""
        nonce = self._next_nonce
        self._next_nonce += 1
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pings[nonce] = fut
        self._send(Envelope(PING, id=nonce))
        try:
            await asyncio.wait_for(fut, timeout)
        finally:
            self._pings.pop(nonce, None)

    async def _start_call(self, method: str, param: Any, timeout: float | None,
                          param_stream: AsyncIterable[Any] | None,
                          stream: _InStream | None, meta: bytes | None = None) -> _OutCall:
        self._check_open()
        assert self._call_slots is not None, "call start() first"
        await self._call_slots.acquire()  # §6: queue beyond the peer's maxInFlight
        try:
            self._check_open()
        except ConnectionClosedError:
            self._call_slots.release()
            raise
        call_id = self._next_id  # taken only once the CALL is written: no gaps (§6)
        if stream is not None:
            stream._id = call_id
        call = _OutCall(call_id, method, stream)
        flags = 0 if param_stream is None else FLAG_STREAM_PARAM
        body = b"" if param_stream is not None else encode_value(self.codec, param)
        timeout_ms = 0 if timeout is None else max(1, round(timeout * 1000))
        env = Envelope(CALL, id=call_id, flags=flags, timeout_ms=timeout_ms, method=method,
                       body=body)
        if meta is not None and CALL_META_FEATURE in self.remote_hello.get("features", []):
            with_meta = Envelope(CALL, id=call_id, flags=flags | FLAG_META,
                                 timeout_ms=timeout_ms, method=method, body=body, meta=meta)
            # §6: the meta is left out rather than send a frame over the peer's limit.
            if len(with_meta.encode()) <= self.remote_hello["maxFrameBytes"]:
                env = with_meta
        try:
            self._send(env)
        except BaseException:
            self._call_slots.release()
            raise
        self._next_id += 1
        self._out[call_id] = call
        if param_stream is not None:
            call.param_credit = _Credit(self.remote_hello["streamWindowBytes"])
            call.param_task = asyncio.create_task(self._send_param_stream(call, param_stream))
        await self._flush()
        return call

    def _cancel_out(self, call: _OutCall, reason: str, code: str | None = None) -> None:
        if self._out.get(call.id) is call and not call.cancelled:
            call.cancelled = True
            if call.stream:
                call.stream.abandon(ConnectionClosedError("the call was cancelled"))
            if call.param_credit:
                call.param_credit.stop()
            body = {"reason": reason} if code is None else {"reason": reason, "code": code}
            self._send(Envelope(CANCEL, id=call.id, body=json_body(body)))
            self._spawn(self._flush())

    async def _send_param_stream(self, call: _OutCall, items: AsyncIterable[Any]) -> None:
        """Produces the param stream under the handler's credit (§7)."""
        credit = call.param_credit
        assert credit is not None
        iterator = aiter(items)
        try:
            while await credit.wait():
                try:
                    item = await anext(iterator)
                except StopAsyncIteration:
                    self._send(Envelope(END, id=call.id))
                    break
                if credit.stopped:
                    break
                data = Envelope(DATA, id=call.id, body=encode_value(self.codec, item))
                credit.value -= len(data.encode())
                self._send(data)
                await self._flush()
        except Exception as err:  # the local source failed: ERROR(R=0) tells the handler
            if not credit.stopped and not self._closed.is_set():
                self._send(Envelope(ERROR, id=call.id,
                                    body=error_body(err, self.remote_hello["maxFrameBytes"],
                                                    call.id)))
        finally:
            closer = getattr(iterator, "aclose", None)
            if closer is not None:
                await closer()  # the source's `finally` runs when the handler stops it
        await self._flush()

    def _finish_out(self, call: _OutCall) -> None:
        del self._out[call.id]
        if call.param_credit:
            call.param_credit.stop()  # §7: the terminal frame also stops the param stream
        assert self._call_slots is not None
        self._call_slots.release()
        self._idle.set()

    # ---- reading ---------------------------------------------------------------------------

    async def _read_loop(self) -> None:
        try:
            while True:
                payload = await read_frame(self._reader, self.options.max_frame_bytes)
                if payload is None:
                    reason = self._goodbye_reason or "the peer closed the connection"
                    await self._abort(ConnectionClosedError(reason))
                    return
                await self._dispatch(decode_envelope(payload), len(payload))
        except ProtocolError as err:
            await self._fail_protocol(err)
        except asyncio.CancelledError:
            pass
        except (ConnectionError, OSError) as err:
            await self._abort(ConnectionClosedError(f"transport error: {err}"))

    async def _dispatch(self, env: Envelope, size: int) -> None:
        self.log(f"recv {env.describe()} {size} B")
        self.stats[f"received {env.label()}"] += 1
        kind = env.kind
        if kind == HELLO:
            raise ProtocolError("a second HELLO")
        elif kind == GOODBYE:
            await self._on_goodbye(env)
        elif kind == PING:
            self._send(Envelope(PONG, id=env.id))
        elif kind == PONG:
            fut = self._pings.get(env.id)
            if fut and not fut.done():
                fut.set_result(None)
        elif kind == NOTIFY:
            self._on_notify(env)
        elif kind == CALL:
            self._on_call(env)
        elif env.r:
            self._on_frame_for_our_call(env, size)
        else:
            self._on_frame_for_their_call(env, size)
        await self._flush()

    async def _on_goodbye(self, env: Envelope) -> None:
        if len(env.body) >= MIN_MAX_FRAME_BYTES:
            raise ProtocolError(f"GOODBYE of {len(env.body) + 1} bytes (at most "
                                f"{MIN_MAX_FRAME_BYTES})")
        body = _goodbye_fields(env.body)
        self._goodbye_reason = f"the peer said GOODBYE: {body.get('code') or 'normal'}" + (
            f" ({body['reason']})" if body.get("reason") else "")
        self.log(self._goodbye_reason)
        if body.get("code") is not None:  # §10: an abortive close, not answered
            await self._abort(ConnectionClosedError(self._goodbye_reason))
            return
        self._received_goodbye.set()
        self._idle.set()
        self._send_goodbye({"reason": "goodbye acknowledged"})  # once: a second is not answered

    def _on_notify(self, env: Envelope) -> None:
        if self.on_notify is None:
            return
        try:
            param = decode_value(self.codec, env.body)
        except BodyDecodeError as err:
            self.log(f"dropping NOTIFY {env.method}: {err}")
            return
        # §6 handler order: call handlers start as tasks, which the event loop runs first in,
        # first out; a notification handler queued the same way starts in frame order with them.
        asyncio.get_running_loop().call_soon(self._run_notify, env.method, param)

    def _run_notify(self, method: str, param: Any) -> None:
        if self._closed.is_set() or self.on_notify is None:
            return
        result = self.on_notify(method, param)
        if inspect.isawaitable(result):
            self._spawn(result)

    def _on_frame_for_our_call(self, env: Envelope, size: int) -> None:
        """R=1 frames: about a call we started."""
        call = self._out.get(env.id)
        if call is None:
            if env.kind in (CANCEL, CREDIT) and env.id < self._next_id:
                return  # §6: crossings with a finished stream are normal
            known = "has finished" if env.id < self._next_id else "was never issued"
            raise ProtocolError(f"{env.describe()}: call {env.id} {known}")
        kind = env.kind
        if kind == RESULT:
            if call.saw_data:
                raise ProtocolError(f"RESULT after DATA on call {env.id}")
            self._finish_out(call)
            if not call.cancelled:
                self._settle(call, env.body)
        elif kind == ERROR:
            self._finish_out(call)
            err = parse_error_body(env.body)
            if call.stream:
                call.stream.end(err)
            if not call.result.done():
                call.result.set_exception(err)
        elif kind == END:
            self._finish_out(call)
            if call.stream:
                call.stream.end()
            if not call.result.done():
                call.result.set_result(None)
        elif kind == DATA:
            call.saw_data = True
            if call.cancelled:
                return
            if call.stream is None:
                # The handler answered with a stream where we expected a value.
                self._cancel_out(call, "expected a value, not a stream")
                call.result.set_exception(RemoteError(
                    f"{call.method} answered with a stream", name="TypeError"))
                return
            call.stream.push(env.body, size)
        elif kind == CREDIT:
            if call.param_credit:
                call.param_credit.grant(env.credit)
        elif kind == CANCEL:
            if call.param_credit:
                call.param_credit.stop()

    def _settle(self, call: _OutCall, body: bytes) -> None:
        try:
            value = decode_value(self.codec, body)
        except BodyDecodeError as err:
            call.result.set_exception(err)
            return
        if call.stream is not None:
            call.stream.end(RemoteError(f"{call.method} answered with a value, not a stream",
                                        name="TypeError"))
        if not call.result.done():
            call.result.set_result(value)

    def _on_frame_for_their_call(self, env: Envelope, size: int) -> None:
        """R=0 frames other than CALL: about a call the peer started."""
        incoming = self._in.get(env.id)
        kind = env.kind
        if incoming is None:
            if env.id > self._max_remote_id:  # §9; an id in a gap below counts as finished (§6)
                raise ProtocolError(f"{env.describe()}: call {env.id} was never issued")
            return  # §7: param-stream frames and CANCEL/CREDIT may cross our terminal frame
        if kind == CANCEL:
            fields = _goodbye_fields(env.body)  # the same lenient JSON object
            reason = fields.get("reason") if isinstance(fields.get("reason"), str) else None
            if fields.get("code") == "deadline_exceeded":  # the caller's clock ran out first
                self._stop_handler(incoming, "deadline exceeded", self._deadline_error(incoming))
            else:
                self._stop_handler(incoming, reason or "cancelled by the caller", RemoteError(
                    f"the caller cancelled {incoming.ctx.method!r}" +
                    (f": {reason}" if reason else ""), name="CallCancelledError",
                    code="cancelled"))
        elif kind == CREDIT:
            if incoming.result_credit:
                incoming.result_credit.grant(env.credit)
        else:
            stream = incoming.param_stream
            if stream is None:
                raise ProtocolError(f"{env.describe()}: call {env.id} has no param stream")
            if kind == DATA:
                stream.push(env.body, size)
            elif kind == END:
                stream.end()
            else:
                stream.end(parse_error_body(env.body))

    # ---- serving calls (§6) ----------------------------------------------------------------

    def _on_call(self, env: Envelope) -> None:
        if env.id <= self._max_remote_id:
            raise ProtocolError(f"CALL id {env.id} is not above the peer's earlier ids "
                                f"(up to {self._max_remote_id})")
        self._max_remote_id = env.id
        if self._received_goodbye.is_set():
            raise ProtocolError(f"CALL {env.id} ({env.method}) after the peer's GOODBYE")
        if len(self._in) >= self.options.max_in_flight:
            self._send_error(env.id, RemoteError(
                f"CALL {env.id} exceeds maxInFlight ({self.options.max_in_flight})",
                name="TooManyCallsError", code="too_many_calls"))
            return
        ctx = CallContext(self, env.id, env.method, env.timeout_ms, parse_call_meta(env.meta))
        incoming = _InCall(ctx)
        self._in[env.id] = incoming
        if env.flags & FLAG_STREAM_PARAM:
            incoming.param_stream = _InStream(self, env.id, credit_r=True)
        handler = self.handlers.get(env.method)
        if handler is None:
            self._finish_in(incoming, error=RemoteError(
                f"No method named {env.method!r}", name="MethodNotFoundError",
                code="method_not_found"))
            return
        if incoming.param_stream is not None:
            param: Any = _ParamStream(self, incoming)
        else:
            try:
                param = decode_value(self.codec, env.body)
            except BodyDecodeError as err:
                self._finish_in(incoming, error=RemoteError(
                    f"the param of {env.method!r} is invalid: {err}", name="InvalidParamError",
                    code="invalid_param"))
                return
        incoming.task = asyncio.create_task(self._run_handler(incoming, handler, param))
        incoming.task.add_done_callback(lambda _: self._handler_done(incoming))
        if env.timeout_ms:
            incoming.deadline = asyncio.get_running_loop().call_later(
                env.timeout_ms / 1000, self._stop_handler, incoming, "deadline exceeded",
                self._deadline_error(incoming))

    @staticmethod
    def _deadline_error(incoming: _InCall) -> RemoteError:
        return RemoteError(f"{incoming.ctx.method!r} exceeded its {incoming.ctx.timeout_ms} ms "
                           "deadline", name="DeadlineExceededError", code="deadline_exceeded")

    def _stop_handler(self, incoming: _InCall, reason: str, error: RemoteError) -> None:
        """CANCEL(R=0) or the deadline: the handler's task is cancelled, and once it has
        unwound (its `finally` blocks have run) `error` goes out as the terminal frame."""
        if self._in.get(incoming.ctx.id) is not incoming or incoming.stop_error:
            return
        incoming.stop_error = error
        incoming.ctx.cancel_reason = reason
        incoming.ctx.cancelled.set()
        if incoming.result_credit:
            incoming.result_credit.stop()
        if incoming.task:
            incoming.task.cancel()

    async def _run_handler(self, incoming: _InCall, handler: Callable[..., Any],
                           param: Any) -> None:
        ctx = incoming.ctx
        try:
            if inspect.isasyncgenfunction(handler):
                await self._produce(incoming, handler(param, ctx))
                self._finish_in(incoming, end=True)
            else:
                value = handler(param, ctx)
                if inspect.isawaitable(value):
                    value = await value
                self._finish_in(incoming, value=value)
        except asyncio.CancelledError:
            pass  # _handler_done sends the terminal frame
        except Exception as err:
            self._finish_in(incoming, error=err)
        await self._flush()

    def _handler_done(self, incoming: _InCall) -> None:
        """Runs when the handler's task ends, however it ends (even cancelled before it
        started): a call still without its terminal frame gets one now."""
        if self._in.get(incoming.ctx.id) is incoming:
            self._finish_in(incoming, error=incoming.stop_error or RemoteError(
                "the handler ended without an answer", name="Error", code="internal"))
            self._spawn(self._flush())

    async def _produce(self, incoming: _InCall, items: AsyncIterator[Any]) -> None:
        """Sends a result stream under the caller's credit (§7)."""
        credit = incoming.result_credit = _Credit(self.remote_hello["streamWindowBytes"])
        try:
            async for item in items:
                data = Envelope(DATA, r=True, id=incoming.ctx.id,
                                body=encode_value(self.codec, item))
                credit.value -= len(data.encode())
                self._send(data)
                await self._flush()
                if not await credit.wait():
                    return
        finally:
            await items.aclose()  # type: ignore[attr-defined]

    def _finish_in(self, incoming: _InCall, *, value: Any = None, end: bool = False,
                   error: BaseException | None = None) -> None:
        """Sends the call's one terminal frame and forgets the call (§6)."""
        call_id = incoming.ctx.id
        if self._in.get(call_id) is not incoming:
            return
        del self._in[call_id]
        self._idle.set()
        if incoming.stop_error is not None:  # the handler's own outcome came too late
            value, end, error = None, False, incoming.stop_error
        if incoming.deadline:
            incoming.deadline.cancel()
        if incoming.result_credit:
            incoming.result_credit.stop()
        stream = incoming.param_stream
        if stream is not None and stream.state == "open":
            stream.abandon(ConnectionClosedError("the call has finished"))
        if error is None and not end:
            try:
                body = encode_value(self.codec, value)
                self._send(Envelope(RESULT, r=True, id=call_id, body=body))
                return
            except FrameTooLargeError as err:
                error = RemoteError(str(err), name="FrameTooLargeError", code="frame_too_large")
            except Exception as err:
                error = RemoteError(f"the result of {incoming.ctx.method!r} could not be "
                                    f"encoded: {err}", name="EncodeError", code="internal")
        if error is not None:
            self._send_error(call_id, error)
        else:
            self._send(Envelope(END, r=True, id=call_id))

    def _send_error(self, call_id: int, err: BaseException) -> None:
        body = error_body(err, self.remote_hello.get("maxFrameBytes", MIN_MAX_FRAME_BYTES),
                          call_id)
        self._send(Envelope(ERROR, r=True, id=call_id, body=body))


class FrameTooLargeError(ValueError):
    """A frame we were about to send exceeds the peer's maxFrameBytes."""


class _ParamStream:
    """The param of a STREAM_PARAM call, as the handler sees it: an async iterator of items.

    Calling `stop()` (or the handler finishing) sends CANCEL(R=1) so the caller stops
    producing (§7).
    """

    def __init__(self, peer: Peer, incoming: _InCall) -> None:
        self._peer = peer
        self._incoming = incoming
        assert incoming.param_stream is not None
        self._stream = incoming.param_stream

    def __aiter__(self) -> _ParamStream:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._stream.__anext__()
        except BodyDecodeError as err:
            self.stop()
            raise RemoteError(f"a param stream item is invalid: {err}",
                              name="InvalidParamError", code="invalid_param") from None

    def stop(self) -> None:
        if self._stream.state == "open":
            self._stream.abandon(ConnectionClosedError("the handler stopped the param stream"))
            self._peer._send(Envelope(CANCEL, r=True, id=self._incoming.ctx.id))


def _goodbye_fields(body: bytes) -> dict[str, Any]:
    """GOODBYE and CANCEL bodies: a JSON object, or empty for {}. Read leniently: §9 does not
    make a malformed one a protocol error."""
    if not body:
        return {}
    try:
        parsed = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return {"reason": repr(body[:200])}
    return parsed if isinstance(parsed, dict) else {}


# --------------------------------------------------------------------------------------------
# Connecting

async def stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """Binary stdin/stdout as asyncio streams (the child side of a stdio transport)."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    read_transport, _ = await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    transport, protocol = await loop.connect_write_pipe(
        lambda: _PipeWriterProtocol(read_transport), sys.stdout.buffer)
    writer = asyncio.StreamWriter(transport, protocol, reader, loop)
    return reader, writer


class _PipeWriterProtocol(asyncio.streams.FlowControlMixin):
    """asyncio's own protocol for write pipes cannot be awaited on close; this one can, and
    closing stdout closes stdin too, so the two pipes behave as one connection."""

    def __init__(self, read_transport: asyncio.BaseTransport) -> None:
        super().__init__()
        self._read_transport = read_transport
        self._closed_future = asyncio.get_running_loop().create_future()

    def connection_lost(self, exc: Exception | None) -> None:
        super().connection_lost(exc)
        self._read_transport.close()
        if not self._closed_future.done():
            self._closed_future.set_result(None)

    def _get_close_waiter(self, stream: asyncio.StreamWriter) -> asyncio.Future[None]:
        return self._closed_future


async def unix_streams(path: str) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(path)


async def socket_streams(sock: socket.socket) -> tuple[asyncio.StreamReader,
                                                        asyncio.StreamWriter]:
    return await asyncio.open_unix_connection(sock=sock)
