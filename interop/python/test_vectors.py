"""Checks the Python reading of docs/protocol.md against the golden vectors.

    python3 interop/python/test_vectors.py [path/to/vectors.json] [-v]

For every valid vector: the length header matches the payload, the payload decodes to the
vector's fields, the body bytes are `bodyHex` and parse to `body`, and encoding the vector's
fields gives back exactly `hex`. Every invalid vector must be rejected as a protocol error.
Also checks the varint table of §3. Exits 0 when everything matches, 1 otherwise.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from conduit_peer import (KINDS_BY_NAME, MIN_MAX_FRAME_BYTES, RESULT, Envelope,  # noqa: E402
                          ProtocolError, decode_envelope, decode_varint, encode_varint)

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
    expected = Envelope(kind=kind, r=r, body=bytes.fromhex(fields.get("bodyHex", "")))
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
    hello = next(v for v in vectors["valid"] if v["frame"]["kind"] == "hello")
    if len(bytes.fromhex(hello["hex"])) - 4 > MIN_MAX_FRAME_BYTES:
        failures += 1
        print("FAIL the HELLO vector is longer than 1024 bytes")
    total = len(vectors["valid"]) + len(vectors["invalid"]) + len(EXTRA_INVALID)
    print(f"{total - failures}/{total} vectors match the Python peer "
          f"(protocol version {vectors['protocolVersion']}; {len(EXTRA_INVALID)} extra invalid "
          f"payloads from test_vectors.py)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
