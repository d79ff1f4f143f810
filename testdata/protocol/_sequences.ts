// The sequence vectors of vectors.json: conversations between a scripted peer and the
// implementation under test, frame by frame. Imported by generate_vectors.ts only.

import { encodeEnvelope, type Envelope } from "../../protocol/envelope.ts";
import { encodeFrame } from "../../framing/frame_decoder.ts";

const utf8 = new TextEncoder();
const json = (value: unknown) => utf8.encode(JSON.stringify(value));
const hex = (bytes: Uint8Array) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
const EMPTY = new Uint8Array(0);

/** How the implementation under test is configured for every sequence. */
export const implementation = {
  codec: "json",
  maxFrameBytes: 1048576,
  maxInFlight: 8,
  streamWindowBytes: 65536,
};

/** The methods the implementation under test serves for the sequences. */
export const service: Record<string, string> = {
  echo: "CALL: returns its param.",
  items: "CALL: a result stream of the elements of its param (an array), then END.",
  note: "NOTIFY: appends its param to a log.",
  notes: "CALL: returns the log of `note` params as an array, as it is when the handler starts.",
  park: "CALL: never answers until cancelled.",
  hold: "CALL with a param stream: reads the stream to its end, then never answers until cancelled.",
  sum: "CALL with a param stream of numbers: returns their sum.",
  fail: "CALL: throws an error named Error with message `level 0` whose cause chain holds `param` more errors (`level 1`, `level 2`, …).",
};

/** The HELLO the scripted peer sends unless a sequence says otherwise. */
export const peerHello = {
  protocol: "conduit",
  version: 1,
  codec: "json",
  maxFrameBytes: 1048576,
  maxInFlight: 8,
  streamWindowBytes: 65536,
  features: [] as string[],
};

/** A frame the implementation must send next: the fields given must match. */
export interface Expect {
  kind: Envelope["kind"];
  id?: number;
  receiverId?: boolean;
  nonce?: number;
  /** The `code` of an ERROR or GOODBYE body; null: the body has none. */
  code?: string | null;
  /** The JSON value of a RESULT or DATA body. */
  body?: unknown;
  /** How many error objects an ERROR body's cause chain holds, the top one included. */
  causeDepth?: number;
}

export type Step = { send: string; frames: string[] } | { expect: Expect };

export interface Sequence {
  name: string;
  description: string;
  steps: Step[];
  /** "closed": the implementation then closes the connection; "open": it stays open. */
  then: "closed" | "open";
}

function send(...envelopes: Envelope[]): Step {
  return {
    send: envelopes.map((e) => hex(encodeFrame(encodeEnvelope(e)))).join(""),
    frames: envelopes.map(describe),
  };
}

function sendRaw(payload: Uint8Array, frame: string): Step {
  return { send: hex(encodeFrame(payload)), frames: [frame] };
}

function describe(e: Envelope): string {
  const r = "receiverId" in e ? `(R=${e.receiverId ? 1 : 0})` : e.kind === "result" ? "(R=1)" : "";
  const fields: string[] = [];
  if ("id" in e) fields.push(`id=${e.id}`);
  if ("nonce" in e) fields.push(`nonce=${e.nonce}`);
  if (e.kind === "call" && e.flags & 1) fields.push("STREAM_PARAM");
  if ("method" in e) fields.push(`"${e.method}"`);
  if (e.kind === "call" && e.meta !== undefined) {
    const text = new TextDecoder().decode(e.meta);
    fields.push(`META ${text.length > 40 ? `${text.slice(0, 30)}…(${e.meta.length} bytes)` : text}`);
  }
  if ("bytes" in e) fields.push(`bytes=${e.bytes}`);
  if ("body" in e && e.body.length > 0) {
    const text = new TextDecoder().decode(e.body);
    fields.push(`body=${text.length > 40 ? `${text.slice(0, 20)}…(${e.body.length} bytes)` : text}`);
  }
  return `${e.kind.toUpperCase()}${r} ${fields.join(" ")}`.trim();
}

const expect = (frame: Expect): Step => ({ expect: frame });

const helloFrame = (fields: Record<string, unknown> = {}): Envelope => ({
  kind: "hello",
  body: json({ ...peerHello, ...fields }),
});
const call = (id: number, method: string, param?: unknown, flags = 0): Envelope => ({
  kind: "call",
  id,
  flags,
  timeoutMs: 0,
  method,
  body: param === undefined ? EMPTY : json(param),
});
/** A CALL with META (§6): `meta` is the meta's JSON text, sent as is. */
const metaCall = (id: number, method: string, param: unknown, meta: string): Envelope => ({
  ...call(id, method, param),
  meta: utf8.encode(meta),
} as Envelope);
/** A meta whose `headers` are `count` headers h0, h1, … with the value "v". */
const manyHeaders = (count: number) =>
  JSON.stringify({ headers: Object.fromEntries(Array.from({ length: count }, (_, i) => [`h${i}`, "v"])) });
/** Call headers at every limit of §6: 32 of them, a 64-character name, 1024-character values. */
const headersAtLimits = JSON.stringify({
  key: "job-1",
  attempt: 2,
  later: { ignored: true },
  headers: {
    traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    tracestate: "congo=t61rcWkgMzE",
    ["n".repeat(64)]: "",
    "0.a_b-c": " !~".repeat(341) + " ",
    ...Object.fromEntries(Array.from({ length: 28 }, (_, i) => [`h${i}`, "v"])),
  },
});

const streamCall = (id: number, method: string): Envelope => ({
  kind: "call",
  id,
  flags: 1,
  timeoutMs: 0,
  method,
  body: EMPTY,
});
const notify = (method: string, param: unknown): Envelope => ({ kind: "notify", method, body: json(param) });
const data = (id: number, body: Uint8Array): Envelope => ({ kind: "data", id, receiverId: false, body });
const end = (id: number): Envelope => ({ kind: "end", id, receiverId: false });
const ping = (nonce: number): Envelope => ({ kind: "ping", nonce });
const goodbye = (body: unknown): Envelope => ({ kind: "goodbye", body: json(body) });

/** The implementation's HELLO, then the scripted peer's `hello` and the implementation's answer. */
function start(hello: Envelope = helloFrame()): Step[] {
  return [send(hello), expect({ kind: "hello" })];
}

/** PING then PONG: the implementation is still open (it ignored or served what came before). */
const alive = (nonce = 99): Step[] => [send(ping(nonce)), expect({ kind: "pong", nonce })];

/** The handshake fails with GOODBYE `code`, and the implementation closes the connection. */
function refused(hello: Envelope, code: string, name: string, description: string): Sequence {
  return {
    name,
    description,
    steps: [...start(hello), expect({ kind: "goodbye", code })],
    then: "closed",
  };
}

const protocolError = (): Step => expect({ kind: "goodbye", code: "protocol_error" });

/** HELLO body text with a field set to raw JSON text (e.g. `8.0`, which JSON.stringify cannot write). */
function helloText(field: string, rawValue: string): Envelope {
  const marker = "__RAW__";
  const text = JSON.stringify({ ...peerHello, [field]: marker }).replace(`"${marker}"`, rawValue);
  return { kind: "hello", body: utf8.encode(text) };
}

function paddedHello(size: number): Envelope {
  const base = json({ ...peerHello, pad: "" }).length;
  return helloFrame({ pad: "x".repeat(size - 1 - base) });
}

const x = (n: number) => "x".repeat(n);
const small = { maxFrameBytes: 1024 };

export const sequences: Sequence[] = [
  // ---------------------------------------------------------------- handshake (§2, §5)
  {
    name: "hello-1024-bytes-accepted",
    description: "A HELLO frame of exactly 1024 bytes is accepted (§2: HELLO and GOODBYE are at most 1024 bytes).",
    steps: [...start(paddedHello(1024)), ...alive()],
    then: "open",
  },
  refused(
    paddedHello(1025),
    "protocol_error",
    "hello-1025-bytes-refused",
    "A HELLO frame of 1025 bytes is a protocol error: before the handshake the receiver's limit is 1024 bytes (§2).",
  ),
  refused(
    { kind: "hello", body: json([1, 2]) },
    "protocol_mismatch",
    "hello-array-refused",
    "A HELLO whose body is JSON but not an object fails check 1 of §5: GOODBYE protocol_mismatch.",
  ),
  refused(
    { kind: "hello", body: utf8.encode("conduit 1 json") },
    "protocol_mismatch",
    "hello-not-json-refused",
    "A HELLO whose body is not JSON fails check 1 of §5: GOODBYE protocol_mismatch.",
  ),
  refused(
    helloFrame({ version: true }),
    "version_mismatch",
    "hello-version-true-refused",
    "`version` must be the number 1: the JSON value true is not (§5).",
  ),
  refused(
    helloFrame({ maxFrameBytes: 1023 }),
    "invalid_hello",
    "hello-max-frame-1023-refused",
    "maxFrameBytes below 1024 is invalid (§5).",
  ),
  {
    name: "hello-max-frame-1024-accepted",
    description: "maxFrameBytes of 1024, the smallest allowed, is accepted (§5).",
    steps: [...start(helloFrame(small)), ...alive()],
    then: "open",
  },
  {
    name: "hello-limits-at-maximum-accepted",
    description:
      "The largest limits are accepted: every limit may be up to 2^53-1, and a maxFrameBytes above 2^32-1 means 2^32-1 (§5).",
    steps: [
      ...start(helloFrame({
        maxFrameBytes: Number.MAX_SAFE_INTEGER,
        maxInFlight: Number.MAX_SAFE_INTEGER,
        streamWindowBytes: Number.MAX_SAFE_INTEGER,
      })),
      ...alive(),
    ],
    then: "open",
  },
  refused(
    helloFrame({ maxInFlight: 2 ** 53 }),
    "invalid_hello",
    "hello-max-in-flight-2^53-refused",
    "A limit above 2^53-1 is invalid (§5).",
  ),
  refused(
    helloFrame({ streamWindowBytes: 0 }),
    "invalid_hello",
    "hello-window-0-refused",
    "streamWindowBytes of 0 is invalid (§5).",
  ),
  {
    name: "hello-integral-numbers-accepted",
    description:
      "A limit is a JSON number with an integer value, however it is written: 8.0 is the integer 8 (§5).",
    steps: [...start(helloText("maxInFlight", "8.0")), ...alive()],
    then: "open",
  },
  refused(
    helloText("maxInFlight", "8.5"),
    "invalid_hello",
    "hello-fractional-limit-refused",
    "A limit that is not an integer is invalid (§5).",
  ),
  refused(
    ping(1),
    "protocol_error",
    "first-frame-ping-refused",
    "The first frame must be HELLO (§5).",
  ),

  // ---------------------------------------------------------------- handler order (§6)
  {
    name: "notifications-then-call-in-order",
    description:
      "Handlers start in frame order (§6): three NOTIFY frames and a CALL in one write; the call sees all three notifications.",
    steps: [
      ...start(),
      send(notify("note", 1), notify("note", 2), notify("note", 3), call(1, "notes")),
      expect({ kind: "result", id: 1, body: [1, 2, 3] }),
    ],
    then: "open",
  },
  {
    name: "call-then-notification-in-order",
    description:
      "Handlers start in frame order (§6): a CALL started before a NOTIFY does not see it; the next CALL does.",
    steps: [
      ...start(),
      send(call(1, "notes"), notify("note", "a"), call(2, "notes")),
      expect({ kind: "result", id: 1, body: [] }),
      expect({ kind: "result", id: 2, body: ["a"] }),
    ],
    then: "open",
  },

  // ---------------------------------------------------------------- sizes (§2, §8)
  {
    name: "result-1024-bytes-sent",
    description: "A RESULT frame of exactly the caller's maxFrameBytes (1024) is sent.",
    steps: [
      ...start(helloFrame(small)),
      send(call(1, "echo", x(1020))),
      expect({ kind: "result", id: 1, body: x(1020) }),
    ],
    then: "open",
  },
  {
    name: "result-1025-bytes-refused",
    description: "A result whose RESULT frame would be 1025 bytes for a caller with maxFrameBytes 1024 is answered with ERROR code frame_too_large (§8).",
    steps: [
      ...start(helloFrame(small)),
      send(call(1, "echo", x(1021))),
      expect({ kind: "error", id: 1, receiverId: true, code: "frame_too_large" }),
      ...alive(),
    ],
    then: "open",
  },
  {
    name: "stream-item-1024-bytes-sent",
    description: "A DATA frame of exactly the caller's maxFrameBytes (1024) is sent.",
    steps: [
      ...start(helloFrame(small)),
      send(call(1, "items", [x(1020)])),
      expect({ kind: "data", id: 1, receiverId: true, body: x(1020) }),
      expect({ kind: "end", id: 1, receiverId: true }),
    ],
    then: "open",
  },
  {
    name: "stream-item-1025-bytes-refused",
    description:
      "A result stream item whose DATA frame would be 1025 bytes ends the call with ERROR code frame_too_large, as a too-big result does (§7, §8).",
    steps: [
      ...start(helloFrame(small)),
      send(call(1, "items", [x(1021)])),
      expect({ kind: "error", id: 1, receiverId: true, code: "frame_too_large" }),
      ...alive(),
    ],
    then: "open",
  },
  {
    name: "error-cause-chain-limit",
    description:
      "The cause limit counts the top error: an error with 7 causes is sent whole (8 objects), one with 8 causes loses the deepest (§8).",
    steps: [
      ...start(),
      send(call(1, "fail", 7)),
      expect({ kind: "error", id: 1, receiverId: true, causeDepth: 8 }),
      send(call(2, "fail", 8)),
      expect({ kind: "error", id: 2, receiverId: true, causeDepth: 8 }),
      send(call(3, "fail", 2)),
      expect({ kind: "error", id: 3, receiverId: true, causeDepth: 3 }),
    ],
    then: "open",
  },

  // ---------------------------------------------------------------- call meta (§6)
  {
    name: "call-meta-headers-at-limits-accepted",
    description:
      "A CALL with META whose headers sit at every limit (32 headers, a 64-character name, a 1024-character value, an empty one) and an unknown member is served as usual; the scripted peer's HELLO lists no features, which only restrains what the implementation sends (§6).",
    steps: [
      ...start(),
      send(metaCall(1, "echo", "ok", headersAtLimits)),
      expect({ kind: "result", id: 1, body: "ok" }),
    ],
    then: "open",
  },
  ...([
    ["call-meta-33-headers-refused", "33 headers (at most 32)", manyHeaders(33)],
    ["call-meta-header-name-65-refused", "a header name of 65 characters", JSON.stringify({ headers: { ["n".repeat(65)]: "v" } })],
    ["call-meta-header-name-uppercase-refused", "a header name with an uppercase letter", '{"headers":{"Trace":"v"}}'],
    ["call-meta-header-name-proto-refused", "the header name __proto__ (it must start with a letter or digit)", '{"headers":{"__proto__":"v"}}'],
    ["call-meta-header-value-1025-refused", "a header value of 1025 characters", JSON.stringify({ headers: { a: "v".repeat(1025) } })],
    ["call-meta-header-value-not-ascii-refused", "a header value with a non-ASCII character", '{"headers":{"a":"caf\u00e9"}}'],
    ["call-meta-header-value-control-refused", "a header value with a control character", '{"headers":{"a":"\\t"}}'],
    ["call-meta-header-value-number-refused", "a header value that is a number", '{"headers":{"a":1}}'],
    ["call-meta-headers-array-refused", "headers that are an array", '{"headers":["a"]}'],
  ] as const).map(([name, what, meta]): Sequence => ({
    name,
    description: `A CALL whose meta has ${what} is a protocol error (§6); its handler never runs.`,
    steps: [...start(), send(metaCall(1, "echo", "no", meta)), protocolError()],
    then: "closed",
  })),

  // ---------------------------------------------------------------- ids (§6, §9)
  {
    name: "gap-id-frames-ignored",
    description:
      "Id 2 was skipped by the caller (ids 1 and 3 are used): like a finished call's id, R=0 frames for it are ignored (§6, §9).",
    steps: [
      ...start(),
      send(
        call(1, "park"),
        call(3, "park"),
        data(2, json(1)),
        end(2),
        { kind: "error", id: 2, receiverId: false, body: json({ name: "Error", message: "x" }) },
        { kind: "cancel", id: 2, receiverId: false, body: EMPTY },
        { kind: "credit", id: 2, receiverId: false, bytes: 100 },
      ),
      ...alive(),
    ],
    then: "open",
  },
  ...[
    ["data", data(2, json(1))],
    ["end", end(2)],
    ["cancel", { kind: "cancel", id: 2, receiverId: false, body: EMPTY }],
    ["credit", { kind: "credit", id: 2, receiverId: false, bytes: 100 }],
  ].map(([kind, frame]): Sequence => ({
    name: `${kind}-r0-above-every-call-id`,
    description:
      `${(kind as string).toUpperCase()}(R=0) for id 2 while the peer's highest CALL id is 1: an id the sender never issued, a protocol error (§9).`,
    steps: [...start(), send(call(1, "park"), frame as Envelope), protocolError()],
    then: "closed",
  })),
  ...[
    ["cancel", { kind: "cancel", id: 1, receiverId: true, body: EMPTY }],
    ["credit", { kind: "credit", id: 1, receiverId: true, bytes: 100 }],
  ].map(([kind, frame]): Sequence => ({
    name: `${kind}-r1-never-issued`,
    description:
      `${(kind as string).toUpperCase()}(R=1) for id 1, which the implementation never issued (it started no call): a protocol error (§9).`,
    steps: [...start(), send(frame as Envelope), protocolError()],
    then: "closed",
  })),

  // ---------------------------------------------------------------- param streams (§7)
  ...[
    ["end", end(1)],
    ["error", { kind: "error", id: 1, receiverId: false, body: json({ name: "Error", message: "late" }) }],
    ["data", data(1, json(2))],
  ].map(([kind, frame]): Sequence => ({
    name: `param-${kind}-after-end`,
    description:
      `${(kind as string).toUpperCase()}(R=0) after END(R=0) of the same param stream, while the call is in flight and the handler has not cancelled the stream: a protocol error (§7, §9).`,
    steps: [
      ...start(),
      send(streamCall(1, "hold"), data(1, json(1)), end(1), frame as Envelope),
      protocolError(),
    ],
    then: "closed",
  })),
  {
    name: "param-bad-item-frames-crossing-cancel-ignored",
    description:
      "A param stream item that does not decode: the handler cancels the stream with CANCEL(R=1) and the call fails with ERROR code invalid_param; the DATA and END that crossed the CANCEL are ignored (§6, §7).",
    steps: [
      ...start(),
      send(streamCall(1, "sum"), data(1, utf8.encode("{")), data(1, json(2))),
      expect({ kind: "cancel", id: 1, receiverId: true }),
      expect({ kind: "error", id: 1, receiverId: true, code: "invalid_param" }),
      send(end(1)),
      ...alive(),
    ],
    then: "open",
  },

  // ---------------------------------------------------------------- goodbye (§2, §10)
  {
    name: "protocol-error-after-own-goodbye",
    description:
      "A protocol error after the implementation's own GOODBYE still sends GOODBYE code protocol_error, then closes (§9, §10).",
    steps: [
      ...start(),
      send(call(1, "park"), goodbye({})),
      expect({ kind: "goodbye", code: null }),
      sendRaw(new Uint8Array([0x7f]), "kind 0x7f (unknown)"),
      protocolError(),
    ],
    then: "closed",
  },
  {
    name: "second-goodbye-without-code-ignored",
    description: "A second GOODBYE without a code changes nothing; the implementation answers only the first (§10).",
    steps: [
      ...start(),
      send(call(1, "park"), goodbye({})),
      expect({ kind: "goodbye", code: null }),
      send(goodbye({ reason: "again" })),
      ...alive(),
    ],
    then: "open",
  },
  {
    name: "goodbye-1024-bytes-accepted",
    description:
      "A GOODBYE frame of exactly 1024 bytes is a normal close: answered with GOODBYE, and with nothing in flight the implementation closes (§10).",
    steps: [
      ...start(),
      send(goodbye({ reason: x(1024 - 1 - json({ reason: "" }).length) })),
      expect({ kind: "goodbye", code: null }),
    ],
    then: "closed",
  },
  {
    name: "goodbye-1025-bytes-refused",
    description: "A GOODBYE frame of 1025 bytes is a protocol error (§2).",
    steps: [
      ...start(),
      send(goodbye({ reason: x(1025 - 1 - json({ reason: "" }).length) })),
      protocolError(),
    ],
    then: "closed",
  },
];
