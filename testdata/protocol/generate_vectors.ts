// Regenerates vectors.json from the reference encoder: `deno run -A testdata/protocol/generate_vectors.ts`.
// Review the diff by hand: the vectors are the contract other implementations test against.

import { encodeEnvelope, type Envelope } from "../../protocol/envelope.ts";
import { encodeFrame } from "../../framing/frame_decoder.ts";
import { implementation, peerHello, sequences, service } from "./_sequences.ts";
import { authProof, authTranscript } from "../../protocol/auth.ts";
import { AUTH_KIND } from "../../protocol/format.ts";
import { helloBody } from "../../protocol/handshake.ts";
import { encodeErrorBody } from "../../wires/error_codec.ts";

const json = (value: unknown) => new TextEncoder().encode(JSON.stringify(value));
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");

const hello = {
  protocol: "conduit",
  version: 1,
  codec: "json",
  maxFrameBytes: 67108864,
  maxInFlight: 1024,
  streamWindowBytes: 262144,
  features: [],
};

const valid: Array<[string, string, Envelope]> = [
  ["hello", "HELLO with the json codec and conduit's default limits", { kind: "hello", body: json(hello) }],
  ["goodbye-empty", "GOODBYE with an empty body: a normal close", { kind: "goodbye", body: new Uint8Array(0) }],
  ["goodbye-normal", "GOODBYE with an empty JSON object: a normal close", { kind: "goodbye", body: json({}) }],
  ["goodbye-protocol-error", "GOODBYE after a protocol error", {
    kind: "goodbye",
    body: json({ code: "protocol_error", reason: "Unknown frame kind 0x7f" }),
  }],
  ["ping", "PING nonce 1", { kind: "ping", nonce: 1 }],
  ["pong", "PONG answering PING nonce 1", { kind: "pong", nonce: 1 }],
  ["ping-large-nonce", "PING nonce 2^53-1: the longest varint", { kind: "ping", nonce: Number.MAX_SAFE_INTEGER }],
  ["call-unary", "CALL id 1 add({a:1,b:2}), no deadline", {
    kind: "call", id: 1, flags: 0, timeoutMs: 0, method: "add", body: json({ a: 1, b: 2 }),
  }],
  ["call-deadline", "CALL id 2 count(2) with a 5000 ms deadline (two-byte varint)", {
    kind: "call", id: 2, flags: 0, timeoutMs: 5000, method: "count", body: json(2),
  }],
  ["call-no-param", "CALL id 3 now() without a param: empty body", {
    kind: "call", id: 3, flags: 0, timeoutMs: 30000, method: "now", body: new Uint8Array(0),
  }],
  ["call-stream-param", "CALL id 4 sum(stream) with STREAM_PARAM: empty body, items follow as DATA(R=0)", {
    kind: "call", id: 4, flags: 1, timeoutMs: 0, method: "sum", body: new Uint8Array(0),
  }],
  ["call-with-meta", "CALL id 5 put(1) with META (flag bit 1): the call's key and attempt after the method (§6)", {
    kind: "call", id: 5, flags: 2, timeoutMs: 0, method: "put", body: json(1),
    meta: json({ key: "job-42", attempt: 2 }),
  }],
  ["call-with-headers", "CALL id 6 trace(null) with META: headers carrying a W3C trace context (§6)", {
    kind: "call", id: 6, flags: 2, timeoutMs: 0, method: "trace", body: json(null),
    meta: json({
      headers: {
        traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        tracestate: "congo=t61rcWkgMzE",
      },
    }),
  }],
  ["call-utf8-method", "CALL id 300 (varint ac 02) to a method with a non-ASCII name", {
    kind: "call", id: 300, flags: 0, timeoutMs: 0, method: "grüße", body: json("hi"),
  }],
  ["notify", "NOTIFY log({level:'info',msg:'hi'})", {
    kind: "notify", method: "log", body: json({ level: "info", msg: "hi" }),
  }],
  ["result", "RESULT(R=1) for call 1: 3", { kind: "result", id: 1, body: json(3) }],
  ["result-no-value", "RESULT(R=1) for call 3 with no value (empty body)", {
    kind: "result", id: 3, body: new Uint8Array(0),
  }],
  ["error-method-not-found", "ERROR(R=1) for call 5: the method does not exist", {
    kind: "error", id: 5, receiverId: true,
    body: json({ name: "MethodNotFoundError", message: 'No method named "nope"', code: "method_not_found" }),
  }],
  ["error-with-cause", "ERROR(R=1) for call 6 with code, data and a cause", {
    kind: "error", id: 6, receiverId: true,
    body: json({
      name: "ValidationError",
      message: "bad input",
      code: "E_INPUT",
      data: { field: "age" },
      cause: { name: "RangeError", message: "age must be >= 0" },
    }),
  }],
  ["error-cancelled", "ERROR(R=1) for call 7: the reply to the caller's CANCEL", {
    kind: "error", id: 7, receiverId: true,
    body: json({ name: "CallCancelledError", message: 'The caller cancelled "slow"', code: "cancelled" }),
  }],
  ["error-param-stream", "ERROR(R=0) for the caller's own call 4: its param stream failed", {
    kind: "error", id: 4, receiverId: false, body: json({ name: "Error", message: "source failed" }),
  }],
  ["cancel-call", "CANCEL(R=0): the caller cancels its call 7, with a reason", {
    kind: "cancel", id: 7, receiverId: false, body: json({ reason: "user pressed stop" }),
  }],
  ["cancel-call-empty", "CANCEL(R=0) for call 8 without a body", {
    kind: "cancel", id: 8, receiverId: false, body: new Uint8Array(0),
  }],
  ["cancel-param-stream", "CANCEL(R=1): the handler stops consuming call 4's param stream", {
    kind: "cancel", id: 4, receiverId: true, body: new Uint8Array(0),
  }],
  ["data-result-stream", "DATA(R=1): item 0 of call 2's result stream", {
    kind: "data", id: 2, receiverId: true, body: json(0),
  }],
  ["data-param-stream", "DATA(R=0): item {x:1} of call 4's param stream", {
    kind: "data", id: 4, receiverId: false, body: json({ x: 1 }),
  }],
  ["end-result-stream", "END(R=1): call 2's result stream finished (terminal)", {
    kind: "end", id: 2, receiverId: true,
  }],
  ["end-param-stream", "END(R=0): call 4's param stream finished", { kind: "end", id: 4, receiverId: false }],
  ["credit-result-stream", "CREDIT(R=0): the caller grants 131072 bytes for its call 2's result stream", {
    kind: "credit", id: 2, receiverId: false, bytes: 131072,
  }],
  ["credit-param-stream", "CREDIT(R=1): the handler grants 3 bytes for call 4's param stream", {
    kind: "credit", id: 4, receiverId: true, bytes: 3,
  }],
  ["goodbye-handshake-timeout", "GOODBYE sent when no valid HELLO arrived within the handshake timeout", {
    kind: "goodbye", body: json({ code: "handshake_timeout", reason: "no HELLO within 10000 ms" }),
  }],
  ["error-frame-too-large", "ERROR(R=1) for call 9: its result (or a result stream item) would exceed the caller's maxFrameBytes", {
    kind: "error", id: 9, receiverId: true,
    body: json({ name: "FrameTooLargeError", message: "Frame of 1025 bytes exceeds maxFrameBytes (1024)", code: "frame_too_large" }),
  }],
  ["error-param-frame-too-large", "ERROR(R=0) for the caller's own call 4: a param stream item would exceed the handler's maxFrameBytes", {
    kind: "error", id: 4, receiverId: false,
    body: json({ name: "FrameTooLargeError", message: "Frame of 1025 bytes exceeds maxFrameBytes (1024)", code: "frame_too_large" }),
  }],
  ["error-invalid-param-item", "ERROR(R=1) for call 4: an item of its param stream could not be decoded", {
    kind: "error", id: 4, receiverId: true,
    body: json({ name: "InvalidParamError", message: 'A param stream item of "sum" could not be decoded', code: "invalid_param" }),
  }],
  ["error-cause-chain-8-levels", "ERROR(R=1) for call 10 with the longest cause chain a sender keeps: 8 error objects, the top one included", {
    kind: "error", id: 10, receiverId: true, body: json(causeChain(8)),
  }],
  ["hello-1024-bytes", "The largest HELLO: its frame payload is exactly 1024 bytes (an unknown field pads it)", {
    kind: "hello", body: json({ ...hello, pad: "x".repeat(padFor(1024)) }),
  }],
];

const invalid: Array<[string, string, string]> = [
  ["empty-frame", "A zero-length frame: no type byte", ""],
  ["unknown-kind", "Kind 0x7f is not defined", "7f"],
  ["reserved-kind", "Kind 0x07 is reserved for extensions", "07"],
  ["auth-after-handshake", "AUTH (0x05) is only valid in the handshake (§5.1)", "05" + "ab".repeat(32)],
  ["ping-with-r", "PING does not allow the R flag", "8301"],
  ["result-without-r", "RESULT must have the R flag", "120133"],
  ["call-with-r", "CALL must not have the R flag", "900100000161"],
  ["call-unknown-flags", "CALL flag bit 2 is not defined in version 1", "1001040001617b7d"],
  ["call-meta-empty", "CALL with META and a meta of 0 bytes", "100102000161" + "00" + "31"],
  ["call-meta-too-long", "CALL with META and a meta of 4097 bytes (at most 4096)", "100102000161" + "8120" + "7b7d"],
  ["call-meta-overrun", "CALL whose metaLength runs past the end of the frame", "100102000161" + "05" + "7b7d"],
  ["call-stream-param-with-body", "CALL with STREAM_PARAM must have an empty body", "100101000161" + "31"],
  ["call-empty-method", "CALL with a method of 0 bytes", "1001000000"],
  ["call-method-overrun", "CALL whose methodLength runs past the end of the frame", "10010000056164"],
  ["call-method-invalid-utf8", "CALL whose method is not valid UTF-8", "1001000002c328"],
  ["call-method-too-long", "CALL with a 1025-byte method", "100100008108" + "61".repeat(1025)],
  ["id-zero", "RESULT for id 0", "920033"],
  ["varint-truncated", "The frame ends inside the id varint", "9280"],
  ["varint-not-minimal", "The id 1 encoded as 81 00 (not minimal)", "928100"],
  ["varint-too-long", "A 9-byte varint", "a2" + "ff".repeat(8) + "01" + "01"],
  ["varint-too-big", "A RESULT whose id varint is above 2^53-1 (2^56-1)", "92" + "ff".repeat(7) + "7f"],
  ["end-with-body", "END has no body", "a10200"],
  ["credit-zero", "CREDIT granting 0 bytes", "220200"],
  ["credit-missing-bytes", "CREDIT without its bytes field", "2202"],
  ["ping-trailing", "PING with a byte after its nonce", "030100"],
];

function causeChain(levels: number): Record<string, unknown> {
  let error: Record<string, unknown> | undefined;
  for (let level = levels - 1; level >= 0; level--) {
    error = { name: "Error", message: `level ${level}`, ...(error ? { cause: error } : {}) };
  }
  return error!;
}

/** The length of `pad` that makes the HELLO above (plus `pad`) a frame payload of `size` bytes. */
function padFor(size: number, base: Record<string, unknown> = hello): number {
  return size - 1 - json({ ...base, pad: "" }).length;
}

const frameHeader = (payloadHex: string) =>
  (payloadHex.length / 2).toString(16).padStart(8, "0") + payloadHex;

/** §5.1: fixed secrets and nonces (real peers draw nonces at random), and what they give. */
function authVector(name: string, secret: Uint8Array, nonceI: Uint8Array, nonceR: Uint8Array) {
  const limits = { codec: "json", maxFrameBytes: 67108864, maxInFlight: 1024, streamWindowBytes: 262144 };
  const helloI = helloBody({ ...limits, auth: { nonce: nonceI, role: "initiator" } });
  const helloR = helloBody({ ...limits, auth: { nonce: nonceR, role: "responder" } });
  const transcript = authTranscript(helloI, helloR);
  const proofI = authProof(secret, "initiator", transcript);
  const proofR = authProof(secret, "responder", transcript);
  const label = (role: string) => new TextEncoder().encode(`conduit-auth-v2\0${role}\0`);
  return {
    name,
    secretHex: hex(secret),
    nonceI: hex(nonceI),
    nonceR: hex(nonceR),
    helloI: new TextDecoder().decode(helloI),
    helloR: new TextDecoder().decode(helloR),
    transcript: hex(transcript),
    messageI: hex(new Uint8Array([...label("initiator"), ...transcript])),
    messageR: hex(new Uint8Array([...label("responder"), ...transcript])),
    proofI: hex(proofI),
    proofR: hex(proofR),
    authFrameI: hex(encodeFrame(new Uint8Array([AUTH_KIND, ...proofI]))),
    authFrameR: hex(encodeFrame(new Uint8Array([AUTH_KIND, ...proofR]))),
  };
}

const seq = (start: number) => Uint8Array.from({ length: 32 }, (_, i) => (start + i) & 0xff);
const auth = [
  authVector("ascii-secret", new TextEncoder().encode("correct horse battery staple"), seq(0), seq(0x80)),
  authVector("binary-secret", seq(0x40), new Uint8Array(32).fill(0xff), new Uint8Array(32)),
  authVector("long-secret", new Uint8Array(100).fill(0x61), seq(7), seq(9)),
];

/** §8: an error too big for the receiver, the room its body has, and the body a sender sends. */
function fitVector(name: string, error: Record<string, unknown>, room: number) {
  const body = new TextDecoder().decode(
    encodeErrorBody(structuredClone(error), { stack: true, maxBytes: room }),
  );
  return { name, error, room, body };
}

const long = (word: string, times: number) => Array(times).fill(word).join(" ");
const chain = (levels: number) => {
  let error: Record<string, unknown> | undefined;
  for (let level = levels - 1; level >= 0; level--) {
    error = {
      name: "Error",
      message: `level ${level}: ${long("because", 20)}`,
      ...(error && { cause: error }),
    };
  }
  return error!;
};
const errorFitting = [
  fitVector("fits-as-it-is", { name: "Error", message: "short", code: "E" }, 1000),
  fitVector("stacks-dropped", {
    name: "TypeError",
    message: "bad",
    stack: long("at frame", 40),
    cause: { name: "Error", message: "deeper", stack: long("at frame", 40) },
  }, 200),
  fitVector("data-dropped-at-every-level", {
    name: "Error",
    message: "with data",
    data: { rows: long("x", 100) },
    cause: { name: "Error", message: "inner", data: [long("y", 100)] },
  }, 120),
  fitVector("causes-dropped-deepest-first", chain(6), 700),
  fitVector("message-shortened-by-code-points", {
    name: "Error",
    message: long("héllo 🌍", 60),
    code: "E_LONG",
  }, 300),
  fitVector("message-that-fits-gets-no-mark", {
    name: "Error",
    message: "x".repeat(60),
    data: long("d", 200),
  }, 90),
  fitVector("code-dropped-then-name-shortened", {
    name: "N".repeat(2000),
    message: "m",
    code: "C".repeat(2000),
  }, 1000),
];

const out = {
  description:
    "Golden vectors for the conduit wire protocol (docs/protocol.md). `hex` is the whole frame: the 4-byte big-endian length, then the payload. " +
    "`frame` lists the decoded fields; `bodyHex` is the body's bytes and `body` its meaning as JSON (every body here is UTF-8 JSON). " +
    "Every `invalid` payload must be rejected as a protocol error; `error` says why. " +
    "`sequences` are conversations: a scripted peer sends the `send` bytes (whole frames, several in one write when listed together) " +
    "to the implementation under test, which must answer with exactly the frames of the `expect` steps, in order, and nothing else; " +
    "an `expect` lists only the fields that must match (`code` is the `code` of an ERROR or GOODBYE body, null for none; " +
    "`body` the JSON value of a RESULT or DATA body; `causeDepth` the number of error objects in an ERROR body, the top one included). " +
    "`then` says whether the implementation closes the connection after the last step (`closed`: no frame follows) or stays open.",
  protocolVersion: 1,
  valid: valid.map(([name, description, envelope]) => {
    const frame: Record<string, unknown> = { ...envelope };
    if ("body" in envelope) {
      frame.bodyHex = hex(envelope.body);
      delete frame.body;
      if (envelope.body.length > 0) frame.body = JSON.parse(new TextDecoder().decode(envelope.body));
    }
    if ("meta" in envelope && envelope.meta !== undefined) {
      frame.metaHex = hex(envelope.meta);
      frame.meta = JSON.parse(new TextDecoder().decode(envelope.meta));
    }
    return { name, description, hex: hex(encodeFrame(encodeEnvelope(envelope))), frame };
  }),
  auth: {
    description:
      "§5.1 shared-secret authentication (method hmac-sha256-v2): the initiator (I, the side that " +
      "connected) and the responder (R, the side that accepted) each send a HELLO with its nonce and role. " +
      "transcript = len16(helloI) || helloI || len16(helloR) || helloR (each HELLO body as sent, its length " +
      "as two big-endian bytes). proofI = HMAC-SHA-256(secret, messageI) with messageI = " +
      "\"conduit-auth-v2\" 0x00 \"initiator\" 0x00 || transcript; proofR likewise with \"responder\". " +
      "The initiator sends authFrameI; the responder checks it and only then sends authFrameR.",
    cases: auth,
  },
  errorFitting: {
    description:
      "§8 fitting an ERROR body to the receiver's limit: `error` is the body a sender would send, `room` the most " +
      "bytes its body may take (the receiver's maxFrameBytes less the type byte and the id's varint), and `body` " +
      "the exact UTF-8 JSON text every sender must produce from them.",
    cases: errorFitting,
  },
  invalid: invalid.map(([name, error, payloadHex]) => ({ name, error, hex: frameHeader(payloadHex) })),
  sequences: {
    implementation,
    service,
    peerHello,
    cases: sequences,
  },
};

await Deno.writeTextFile(new URL("./vectors.json", import.meta.url), JSON.stringify(out, null, 2) + "\n");
