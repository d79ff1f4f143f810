"""Checks the Python reading of docs/protocol.md against the golden vectors.

    python3 interop/python/test_vectors.py [path/to/vectors.json] [-v]

For every valid vector: the length header matches the payload, the payload decodes to the
vector's fields, the body bytes are `bodyHex` and parse to `body`, and encoding the vector's
fields gives back exactly `hex`. Every invalid vector must be rejected as a protocol error.
Every sequence vector is played against a Python Peer serving the vectors' service over a
socketpair: the scripted side sends each step's bytes and checks the Peer's answers frame by
frame. Also checks the varint table of §3. Exits 0 when everything matches, 1 otherwise.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conduit_peer import (KINDS_BY_NAME, MIN_MAX_FRAME_BYTES, RESULT,  # noqa: E402
                          ConnectionClosedError, Envelope, HandshakeError, Peer, PeerOptions,
                          ProtocolError, RemoteError, decode_envelope, decode_varint,
                          encode_varint, read_frame, socket_streams)
import conduit_peer  # noqa: E402

DEFAULT_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "testdata",
                            "protocol", "vectors.json")

# §3's table of varints.
VARINT_TABLE = [(0, "00"), (1, "01"), (127, "7f"), (128, "8001"), (300, "ac02"),
                (16384, "808001"), (2**53 - 1, "ffffffffffffff0f")]

# Invalid payloads vectors.json does not cover on their own: its "varint-too-big" uses type byte
# a3 (kind 0x23, reserved), which is rejected for its kind before the varint is read.
EXTRA_INVALID = [
    ("varint-too-big-in-result", "RESULT whose id is 2^56-1", "92ffffffffffffff7f"),
    ("result-id-2^53", "RESULT whose id is 2^53", "928080808080808010"),
    ("call-missing-method", "CALL that ends after timeoutMs", "10010000"),
    ("pong-with-r", "PONG does not allow the R flag", "8401"),
    ("notify-with-r", "NOTIFY does not allow the R flag", "9101616231"),
]

# Vector field name -> Envelope attribute.
FIELDS = {"id": "id", "nonce": "id", "flags": "flags", "timeoutMs": "timeout_ms",
          "method": "method", "bytes": "credit"}


def check_valid(vector: dict[str, Any]) -> list[str]:
    problems = []
    frame = bytes.fromhex(vector["hex"])
    payload = frame[4:]
    if int.from_bytes(frame[:4], "big") != len(payload):
        problems.append(f"length header {frame[:4].hex()} != payload length {len(payload)}")
    fields = vector["frame"]
    kind = KINDS_BY_NAME[fields["kind"]]
    r = fields.get("receiverId", kind == RESULT)
    expected = Envelope(kind=kind, r=r, body=bytes.fromhex(fields.get("bodyHex", "")),
                        meta=bytes.fromhex(fields["metaHex"]) if "metaHex" in fields else None)
    for name, attr in FIELDS.items():
        if name in fields:
            setattr(expected, attr, fields[name])
    try:
        decoded = decode_envelope(payload)
    except ProtocolError as err:
        return problems + [f"rejected: {err}"]
    if decoded != expected:
        problems.append(f"decoded {decoded} != expected {expected}")
    if "body" in fields and json.loads(decoded.body.decode("utf-8")) != fields["body"]:
        problems.append(f"body {decoded.body!r} does not parse to {fields['body']!r}")
    if expected.encode() != payload:
        problems.append(f"re-encoded {expected.encode().hex()} != {payload.hex()}")
    return problems


def check_invalid(vector: dict[str, Any]) -> tuple[list[str], str]:
    """Returns (problems, why it was rejected)."""
    frame = bytes.fromhex(vector["hex"])
    length = int.from_bytes(frame[:4], "big")
    if length == 0:
        return [], "zero-length frame"
    if length != len(frame) - 4:
        return [f"length header says {length}, payload has {len(frame) - 4}"], ""
    try:
        decoded = decode_envelope(frame[4:])
    except ProtocolError as err:
        return [], str(err)
    return [f"accepted as {decoded.describe()}"], ""


def check_varints() -> list[str]:
    problems = []
    for value, hexed in VARINT_TABLE:
        if encode_varint(value).hex() != hexed:
            problems.append(f"varint {value} encodes as {encode_varint(value).hex()}, not {hexed}")
        if decode_varint(bytes.fromhex(hexed), 0) != (value, len(hexed) // 2):
            problems.append(f"varint {hexed} does not decode to {value}")
    return problems


# How long a sequence waits for a frame before calling it missing (no speed is tested).
STUCK_SECONDS = 10


def service() -> tuple[dict[str, Any], Any]:
    """The methods of `sequences.service` (handlers and the notification handler)."""
    log: list[Any] = []

    async def echo(param: Any, ctx: Any) -> Any:
        return param

    async def items(param: Any, ctx: Any) -> Any:
        for item in param:
            yield item

    async def notes(param: Any, ctx: Any) -> Any:
        return list(log)

    async def park(param: Any, ctx: Any) -> Any:
        await asyncio.Event().wait()

    async def hold(stream: Any, ctx: Any) -> Any:
        async for _ in stream:
            pass
        await asyncio.Event().wait()

    async def total(stream: Any, ctx: Any) -> Any:
        result = 0
        async for item in stream:
            result += item
        return result

    async def fail(causes: int, ctx: Any) -> Any:
        cause = None
        for level in range(causes, 0, -1):
            cause = RemoteError(f"level {level}", cause=cause)
        raise RemoteError("level 0", cause=cause)

    def on_notify(method: str, param: Any) -> None:
        if method == "note":
            log.append(param)

    handlers = {"echo": echo, "items": items, "notes": notes, "park": park, "hold": hold,
                "sum": total, "fail": fail}
    return handlers, on_notify


def cause_depth(error: Any) -> int:
    return 0 if not isinstance(error, dict) else 1 + cause_depth(error.get("cause"))


def mismatch(env: Envelope, expect: dict[str, Any]) -> str | None:
    """What differs between a frame and a sequence step's `expect`, or None."""
    if KINDS_BY_NAME[expect["kind"]] != env.kind:
        return f"expected {expect['kind'].upper()}, got {env.describe()}"
    for key, actual in (("id", env.id), ("nonce", env.id), ("receiverId", env.r)):
        if key in expect and expect[key] != actual:
            return f"{key} {actual!r} != {expect[key]!r} in {env.describe()}"
    body = json.loads(env.body.decode("utf-8")) if env.body else {}
    code = body.get("code") if isinstance(body, dict) else None
    if "code" in expect and code != expect["code"]:
        return f"code of {env.describe()} body {env.body[:200]!r} is not {expect['code']!r}"
    if "body" in expect and body != expect["body"]:
        return f"body {env.body[:200]!r} is not {expect['body']!r}"
    if "causeDepth" in expect and cause_depth(body) != expect["causeDepth"]:
        return f"cause chain of {cause_depth(body)} levels, not {expect['causeDepth']}"
    return None


async def play(sequence: dict[str, Any], implementation: dict[str, Any]) -> list[str]:
    """Plays one sequence vector against a Python Peer; returns the problems."""
    a, b = socket.socketpair()
    handlers, on_notify = service()
    options = PeerOptions(codec=implementation["codec"],
                          max_frame_bytes=implementation["maxFrameBytes"],
                          max_in_flight=implementation["maxInFlight"],
                          stream_window_bytes=implementation["streamWindowBytes"])
    peer = Peer(*await socket_streams(a), handlers, on_notify, options, name="under-test")
    reader, writer = await socket_streams(b)

    async def serve() -> None:
        try:
            await peer.start()
        except HandshakeError:
            return
        await peer.serve_until_goodbye()

    serving = asyncio.create_task(serve())
    problems: list[str] = []
    try:
        for index, step in enumerate(sequence["steps"]):
            if "send" in step:
                writer.write(bytes.fromhex(step["send"]))
                await writer.drain()
                continue
            payload = await asyncio.wait_for(read_frame(reader, 2**32 - 1), STUCK_SECONDS)
            if payload is None:
                return [f"step {index}: the peer closed instead of sending {step['expect']}"]
            problem = mismatch(decode_envelope(payload), step["expect"])
            if problem:
                return [f"step {index}: {problem}"]
        if sequence["then"] == "closed":
            payload = await asyncio.wait_for(read_frame(reader, 2**32 - 1), STUCK_SECONDS)
            if payload is not None:
                problems.append(f"a frame after the last step: {decode_envelope(payload)}")
    except (asyncio.TimeoutError, ConnectionError, ProtocolError) as err:
        problems.append(f"{type(err).__name__}: {err}")
    finally:
        writer.close()
        if not peer.closed:
            await peer._abort(ConnectionClosedError("sequence over"))
        await asyncio.wait_for(serving, STUCK_SECONDS)
    return problems


async def play_all(sequences: dict[str, Any]) -> list[tuple[str, list[str]]]:
    return [(case["name"], await play(case, sequences["implementation"]))
            for case in sequences["cases"]]


def check_auth(vector: dict[str, Any]) -> list[str]:
    """§5.1: both HELLOs give the transcript, and the transcript both proofs and AUTH frames."""
    problems = []
    secret = bytes.fromhex(vector["secretHex"])
    for side, role in (("I", "initiator"), ("R", "responder")):
        auth = json.loads(vector[f"hello{side}"])["auth"]
        nonce = conduit_peer.parse_nonce(auth["nonce"])
        if nonce is None or nonce.hex() != vector[f"nonce{side}"]:
            problems.append(f"hello{side}'s nonce does not read as nonce{side}")
        if auth.get("role") != role:
            problems.append(f"hello{side}'s role is {auth.get('role')!r}")
    transcript = conduit_peer.auth_transcript(vector["helloI"].encode(), vector["helloR"].encode())
    if transcript.hex() != vector["transcript"]:
        problems.append(f"the transcript is {transcript.hex()}")
    if problems:
        return problems
    for side, role in (("I", "initiator"), ("R", "responder")):
        proof = conduit_peer.auth_proof(secret, role, transcript)
        if proof.hex() != vector[f"proof{side}"]:
            problems.append(f"proof{side} is {proof.hex()}")
        wire = conduit_peer.frame_bytes(bytes([conduit_peer.AUTH]) + proof).hex()
        if wire != vector[f"authFrame{side}"]:
            problems.append(f"authFrame{side} is {wire}")
    return problems


def check_error_fitting(vector: dict[str, Any]) -> list[str]:
    """§8: the error shrunk to its room is exactly the vector's body."""
    body = conduit_peer.fit_error(json.loads(json.dumps(vector["error"])), vector["room"])
    return [] if body.decode("utf-8") == vector["body"] else [f"fitted to {body.decode()!r}"]


def main(argv: list[str]) -> int:
    verbose = "-v" in argv
    paths = [arg for arg in argv if arg != "-v"]
    with open(paths[0] if paths else DEFAULT_PATH, encoding="utf-8") as file:
        vectors = json.load(file)
    failures = 0
    for problem in check_varints():
        failures += 1
        print(f"FAIL varint table: {problem}")
    for vector in vectors["valid"]:
        problems = check_valid(vector)
        failures += bool(problems)
        for problem in problems:
            print(f"FAIL valid/{vector['name']}: {problem}")
        if verbose and not problems:
            print(f"ok   valid/{vector['name']}")
    for vector in vectors["invalid"]:
        problems, why = check_invalid(vector)
        failures += bool(problems)
        for problem in problems:
            print(f"FAIL invalid/{vector['name']} ({vector['error']}): {problem}")
        if verbose and not problems:
            print(f"ok   invalid/{vector['name']}: expected {vector['error']!r}; got {why!r}")
    for name, why, payload in EXTRA_INVALID:
        problems, got = check_invalid({"hex": f"{len(payload) // 2:08x}{payload}"})
        failures += bool(problems)
        for problem in problems:
            print(f"FAIL extra/{name} ({why}): {problem}")
        if verbose and not problems:
            print(f"ok   extra/{name}: expected {why!r}; got {got!r}")
    checked = [(f"sequence/{name}", problems)
               for name, problems in asyncio.run(play_all(vectors["sequences"]))]
    checked += [(f"auth/{vector['name']}", check_auth(vector))
                for vector in vectors["auth"]["cases"]]
    checked += [(f"errorFitting/{vector['name']}", check_error_fitting(vector))
                for vector in vectors["errorFitting"]["cases"]]
    for label, problems in checked:
        failures += bool(problems)
        for problem in problems:
            print(f"FAIL {label}: {problem}")
        if verbose and not problems:
            print(f"ok   {label}")
    for hello in (v for v in vectors["valid"] if v["frame"]["kind"] == "hello"):
        if len(bytes.fromhex(hello["hex"])) - 4 > MIN_MAX_FRAME_BYTES:
            failures += 1
            print(f"FAIL the HELLO vector {hello['name']} is longer than 1024 bytes")
    total = (len(vectors["valid"]) + len(vectors["invalid"]) + len(EXTRA_INVALID) +
             len(vectors["sequences"]["cases"]) + len(vectors["auth"]["cases"]) +
             len(vectors["errorFitting"]["cases"]))
    print(f"{total - failures}/{total} vectors match the Python peer "
          f"(protocol version {vectors['protocolVersion']}; {len(EXTRA_INVALID)} extra invalid "
          f"payloads from test_vectors.py)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
