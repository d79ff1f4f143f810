/**
 * A CALL's meta (docs/protocol.md §6, "Call meta"): a small JSON object after the method that
 * says which logical call this is and which attempt of it, so a handler can tell a retry from
 * a new call. Sent only to a peer whose HELLO announces {@linkcode CALL_META_FEATURE}, behind
 * CALL flag {@linkcode CALL_FLAG_META}.
 *
 * @example
 * ```ts
 * import { callMetaBody, parseCallMeta } from "@conduit/ipc/protocol";
 * import assert from "node:assert/strict";
 *
 * const body = callMetaBody({ key: "upload-7", attempt: 2 });
 * assert.deepEqual(parseCallMeta(body), { key: "upload-7", attempt: 2 });
 * ```
 *
 * @module
 */

import { ProtocolError } from "./protocol_error.ts";

/** The HELLO feature of a peer that reads call meta. */
export const CALL_META_FEATURE = "call-meta";
/** CALL flag bit 1: a meta object follows the method. */
export const CALL_FLAG_META = 2;
/** The largest meta object, in bytes of UTF-8 JSON. */
export const MAX_CALL_META_BYTES = 4096;
/** The longest call key, in code points. */
export const MAX_CALL_KEY_LENGTH = 128;

/** What a CALL's meta says (each member optional). */
export interface CallMeta {
  /** The caller's stable name for the logical call: the same on every attempt. */
  readonly key?: string;
  /** Which attempt of the call this is: 1 for the first. */
  readonly attempt?: number;
}

const utf8 = new TextEncoder();
const text = new TextDecoder("utf-8", { fatal: true });

/**
 * The meta's bytes: compact JSON with `key` then `attempt`, each only when given.
 *
 * @param meta The key and attempt.
 * @returns The UTF-8 JSON object.
 * @throws {RangeError} When the key is empty or too long, or the attempt not an integer >= 1.
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
  const problem = metaProblem(meta.key, meta.attempt);
  if (problem !== undefined) throw new RangeError(problem);
  return utf8.encode(JSON.stringify({ key: meta.key, attempt: meta.attempt }));
}

/**
 * Reads a CALL's meta; members it does not know are ignored.
 *
 * @param bytes The meta's bytes.
 * @returns Its key and attempt (each absent when the meta has none).
 * @throws {ProtocolError} When the bytes are not a JSON object, or its `key` or `attempt` is
 * not of its form.
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
  const { key, attempt } = value as { key?: unknown; attempt?: unknown };
  const problem = metaProblem(key, attempt);
  if (problem !== undefined) throw new ProtocolError(`A CALL's meta: ${problem}`);
  return {
    ...(key !== undefined && { key: key as string }),
    ...(attempt !== undefined && { attempt: attempt as number }),
  };
}

function metaProblem(key: unknown, attempt: unknown): string | undefined {
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
