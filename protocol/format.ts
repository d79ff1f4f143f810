/**
 * The frame kinds of the conduit wire format (docs/protocol.md §4): the low 7 bits of a
 * frame's type byte, and the R flag in its high bit.
 *
 * @example
 * ```ts
 * import { FRAME_KINDS, R_FLAG } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(FRAME_KINDS.result | R_FLAG, 0x92);
 * ```
 *
 * @module
 */

import { ConduitError } from "../errors.ts";

/**
 * The kind numbers of the frame types (the low 7 bits of the type byte).
 *
 * @example
 * ```ts
 * import { FRAME_KINDS } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(FRAME_KINDS.call, 0x10);
 * ```
 */
export const FRAME_KINDS = {
  hello: 0x01,
  goodbye: 0x02,
  ping: 0x03,
  pong: 0x04,
  shape: 0x06,
  call: 0x10,
  notify: 0x11,
  result: 0x12,
  error: 0x13,
  cancel: 0x14,
  data: 0x20,
  end: 0x21,
  credit: 0x22,
} as const;

/** The name of a frame kind. */
export type FrameKindName = keyof typeof FRAME_KINDS;

/**
 * The R flag of the type byte: the frame's id was allocated by the frame's receiver.
 *
 * @example
 * ```ts
 * import { FRAME_KINDS, R_FLAG } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal((FRAME_KINDS.data | R_FLAG) & 0x7f, FRAME_KINDS.data);
 * ```
 */
export const R_FLAG = 0x80;

/**
 * CALL flag bit 0: the param is a stream of DATA(R=0) frames.
 *
 * @example
 * ```ts
 * import { CALL_FLAG_STREAM_PARAM, decodeEnvelope, encodeEnvelope } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const frame = encodeEnvelope({
 *   kind: "call", id: 1, flags: CALL_FLAG_STREAM_PARAM, timeoutMs: 0, method: "m", body: new Uint8Array(0),
 * });
 * assert.equal(decodeEnvelope(frame).kind, "call");
 * ```
 */
export const CALL_FLAG_STREAM_PARAM = 1;

/**
 * The name of a type byte's kind, for messages (`"DATA(R=1)"`, `"kind 0x7f"`).
 *
 * @example
 * ```ts
 * import { describeType } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(describeType(0x92), "RESULT(R=1)");
 * assert.equal(describeType(0x7f), "kind 0x7f");
 * ```
 */
export function describeType(type: number): string {
  const kind = type & 0x7f;
  for (const [name, value] of Object.entries(FRAME_KINDS)) {
    if (value === kind) return `${name.toUpperCase()}(R=${type >= R_FLAG ? 1 : 0})`;
  }
  return `kind 0x${kind.toString(16)}`;
}

/** The kind byte of the AUTH frame: its payload is this byte and the 32-byte proof. */
export const AUTH_KIND = 0x05;

// The fixed limits of the conduit wire format (docs/protocol.md §2–§4): what a peer must
// check before it allocates, whatever it announces in its HELLO.
//
// @example
// ```ts
// import { MAX_CONTROL_FRAME_BYTES, MAX_METHOD_BYTES, PROTOCOL_VERSION } from "@conduit/ipc/protocol";
// import assert from "node:assert/strict";
//
// assert.equal(PROTOCOL_VERSION, 1);
// assert.equal(MAX_METHOD_BYTES, 1024);
// assert.equal(MAX_CONTROL_FRAME_BYTES, 1024);
// ```
//
/**
 * The protocol version this implementation speaks (the `version` of its HELLO).
 *
 * @example
 * ```ts
 * import { PROTOCOL_VERSION } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(PROTOCOL_VERSION, 1);
 * ```
 */
export const PROTOCOL_VERSION = 1;

/**
 * The longest method name, in UTF-8 bytes.
 *
 * @example
 * ```ts
 * import { MAX_METHOD_BYTES } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.ok(new TextEncoder().encode("add").length <= MAX_METHOD_BYTES);
 * ```
 */
export const MAX_METHOD_BYTES = 1024;

/**
 * HELLO and GOODBYE frames must fit in this many bytes, and no peer may announce a
 * `maxFrameBytes` below it.
 *
 * @example
 * ```ts
 * import { MAX_CONTROL_FRAME_BYTES } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(MAX_CONTROL_FRAME_BYTES, 1024);
 * ```
 */
export const MAX_CONTROL_FRAME_BYTES = 1024;

/**
 * The most bytes a varint may take on the wire.
 *
 * @example
 * ```ts
 * import { MAX_VARINT_BYTES } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(2 ** (7 * MAX_VARINT_BYTES) > Number.MAX_SAFE_INTEGER, true);
 * ```
 */
export const MAX_VARINT_BYTES = 8;

// The error for bytes the wire protocol forbids.
//
// @example
// ```ts
// import { decodeEnvelope, ProtocolError } from "@conduit/ipc/protocol";
// import assert from "node:assert/strict";
//
// assert.throws(() => decodeEnvelope(new Uint8Array([0x7f])), ProtocolError);
// ```
//
export { ConduitError };

/**
 * The peer sent something the protocol forbids (a malformed or unknown frame, an id it never
 * issued, a result twice, a stream item after its end, a frame too large). The connection is
 * closed; pending calls fail with a `ConnectionClosedError` whose `cause` is this.
 *
 * @example
 * ```ts
 * import { ProtocolError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * assert.equal(new ProtocolError("unknown frame kind 0x7f").name, "ProtocolError");
 * ```
 */
export class ProtocolError extends ConduitError {}

// A CALL's meta (docs/protocol.md §6, "Call meta"): a small JSON object after the method that
// says which logical call this is and which attempt of it, so a handler can tell a retry from
// a new call. Sent only to a peer whose HELLO announces {@linkcode CALL_META_FEATURE}, behind
// CALL flag {@linkcode CALL_FLAG_META}.
//
// @example
// ```ts
// import { callMetaBody, parseCallMeta } from "@conduit/ipc/protocol";
// import assert from "node:assert/strict";
//
// const body = callMetaBody({ key: "upload-7", attempt: 2 });
// assert.deepEqual(parseCallMeta(body), { key: "upload-7", attempt: 2 });
// ```
//
/**
 * The HELLO feature of a peer that reads SHAPE frames and records sent by shape
 * (docs/protocol.md §14): listed by conduit when its channel codec can send records by shape
 * and the channel's `shapes` option is on (the default).
 *
 * @example
 * ```ts
 * import { SHAPES_FEATURE } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(SHAPES_FEATURE, "shapes");
 * ```
 */
export const SHAPES_FEATURE = "shapes";

/** The HELLO feature of a peer that reads call meta. */
export const CALL_META_FEATURE = "call-meta";
/** CALL flag bit 1: a meta object follows the method. */
export const CALL_FLAG_META = 2;
/** The largest meta object, in bytes of UTF-8 JSON. */
export const MAX_CALL_META_BYTES = 4096;
/** The longest call key, in code points. */
export const MAX_CALL_KEY_LENGTH = 128;
/** The most headers one CALL's meta carries. */
export const MAX_CALL_HEADERS = 32;
/** The longest header name: 1 to 64 of `a-z`, `0-9`, `-`, `_` and `.`. */
export const MAX_HEADER_NAME_LENGTH = 64;
/** The longest header value: 0 to 1024 printable ASCII characters (0x20 to 0x7e). */
export const MAX_HEADER_VALUE_LENGTH = 1024;

/** What a CALL's meta says (each member optional). */
export interface CallMeta {
  /** The caller's stable name for the logical call: the same on every attempt. */
  readonly key?: string;
  /** Which attempt of the call this is: 1 for the first. */
  readonly attempt?: number;
  /**
   * Strings the caller attaches to the call (a trace context, a request id…), by name: at most
   * {@linkcode MAX_CALL_HEADERS}, each name a lowercase token and each value printable ASCII.
   */
  readonly headers?: Readonly<Record<string, string>>;
}

const utf8 = new TextEncoder();
// Fatal, and a byte order mark kept: JSON text has none (RFC 8259 §8.1), so a meta behind one
// is not JSON text, as a JSON parser that reads UTF-8 bytes (Python's) finds.
const text = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * The meta's bytes: compact JSON with `key`, `attempt` and `headers`, each only when given
 * (headers only when there is one).
 *
 * @param meta The key, attempt and headers.
 * @returns The UTF-8 JSON object.
 * @throws {RangeError} When the key is empty or too long, the attempt not an integer >= 1, a
 * header's name or value not of its form, or the whole over {@linkcode MAX_CALL_META_BYTES}.
 *
 * @example
 * ```ts
 * import { callMetaBody } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.equal(new TextDecoder().decode(callMetaBody({ attempt: 3 })), '{"attempt":3}');
 * ```
 */
export function callMetaBody(meta: CallMeta): Uint8Array {
  const headers = meta.headers;
  const problem = metaProblem(meta.key, meta.attempt, headers);
  if (problem !== undefined) throw new RangeError(problem);
  const bytes = utf8.encode(
    JSON.stringify({
      key: meta.key,
      attempt: meta.attempt,
      headers: headers !== undefined && hasAny(headers) ? headers : undefined,
    }),
  );
  if (bytes.length > MAX_CALL_META_BYTES) {
    throw new RangeError(
      `A call's meta (key, attempt and headers) is ${bytes.length} bytes, over ${MAX_CALL_META_BYTES}`,
    );
  }
  return bytes;
}

/**
 * Reads a CALL's meta; members it does not know are ignored.
 *
 * @param bytes The meta's bytes.
 * @returns Its key, attempt and headers (each absent when the meta has none).
 * @throws {ProtocolError} When the bytes are not a JSON object, or its `key`, `attempt` or
 * `headers` is not of its form.
 *
 * @example
 * ```ts
 * import { parseCallMeta, ProtocolError } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(parseCallMeta(new TextEncoder().encode('{"attempt":1,"x":0}')), { attempt: 1 });
 * assert.throws(() => parseCallMeta(new TextEncoder().encode('{"attempt":0}')), ProtocolError);
 * ```
 */
export function parseCallMeta(bytes: Uint8Array): CallMeta {
  let value: unknown;
  try {
    value = JSON.parse(text.decode(bytes));
  } catch {
    throw new ProtocolError("A CALL's meta is not UTF-8 JSON");
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    throw new ProtocolError("A CALL's meta is not a JSON object");
  }
  const { key, attempt, headers } = value as {
    key?: unknown;
    attempt?: unknown;
    headers?: unknown;
  };
  const problem = metaProblem(key, attempt, headers);
  if (problem !== undefined) throw new ProtocolError(`A CALL's meta: ${problem}`);
  return {
    ...(key !== undefined && { key: key as string }),
    ...(attempt !== undefined && { attempt: attempt as number }),
    ...(headers !== undefined && { headers: Object.freeze(headers as Record<string, string>) }),
  };
}

const HEADER_NAME = /^[a-z0-9][a-z0-9_.-]{0,63}$/;
const HEADER_VALUE = /^[\x20-\x7e]{0,1024}$/;

function hasAny(headers: object): boolean {
  for (const _ in headers) return true;
  return false;
}

function metaProblem(key: unknown, attempt: unknown, headers?: unknown): string | undefined {
  if (headers !== undefined) {
    const problem = headersProblem(headers);
    if (problem !== undefined) return problem;
  }
  if (
    key !== undefined &&
    (typeof key !== "string" || key.length === 0 || [...key].length > MAX_CALL_KEY_LENGTH)
  ) {
    return `key must be a string of 1 to ${MAX_CALL_KEY_LENGTH} characters`;
  }
  if (attempt !== undefined && (!Number.isSafeInteger(attempt) || (attempt as number) < 1)) {
    return `attempt must be an integer >= 1, not ${JSON.stringify(attempt)}`;
  }
  return undefined;
}

function headersProblem(headers: unknown): string | undefined {
  if (typeof headers !== "object" || headers === null || Array.isArray(headers)) {
    return "headers must be an object of strings";
  }
  let count = 0;
  for (const [name, value] of Object.entries(headers)) {
    if (++count > MAX_CALL_HEADERS) return `more than ${MAX_CALL_HEADERS} headers`;
    if (!HEADER_NAME.test(name)) {
      return `header name ${JSON.stringify(name.slice(0, 70))} is not 1 to ` +
        `${MAX_HEADER_NAME_LENGTH} of a-z, 0-9, "-", "_" and "."`;
    }
    if (typeof value !== "string" || !HEADER_VALUE.test(value)) {
      return `header "${name}" must be a string of 0 to ${MAX_HEADER_VALUE_LENGTH} printable ASCII characters`;
    }
  }
  return undefined;
}

/**
 * The members of `meta` that are call headers: string values of header names, at most
 * {@linkcode MAX_CALL_HEADERS}, in order; the rest is left out. For protocols whose messages carry
 * headers among other things (MCP's `_meta`).
 *
 * @param meta Any value; only a plain object's members count.
 * @returns The headers, or undefined when there are none.
 *
 * @example
 * ```ts
 * import { headersIn } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * assert.deepEqual(headersIn({ traceparent: "00-x-y-01", progressToken: 7, Bad: "z" }), {
 *   traceparent: "00-x-y-01",
 * });
 * assert.equal(headersIn("nope"), undefined);
 * ```
 */
export function headersIn(meta: unknown): Readonly<Record<string, string>> | undefined {
  if (typeof meta !== "object" || meta === null || Array.isArray(meta)) return undefined;
  const headers: Record<string, string> = {};
  let count = 0;
  for (const [name, value] of Object.entries(meta)) {
    if (count === MAX_CALL_HEADERS) break;
    if (typeof value === "string" && HEADER_NAME.test(name) && HEADER_VALUE.test(value)) {
      headers[name] = value;
      count++;
    }
  }
  return count === 0 ? undefined : Object.freeze(headers);
}
