/**
 * Errors as values on the wire (docs/protocol.md §8): a thrown error becomes a JSON object of
 * `name`, `message`, `code`, `data`, `stack` (only towards a trusted peer) and `cause`, and
 * comes back as a {@linkcode RemoteError}, or as the caller's own class when registered.
 *
 * @example
 * ```ts
 * import { decodeErrorBody, encodeErrorBody, RemoteError } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const thrown = new TypeError("bad", { cause: new RangeError("too big") });
 * const revived = decodeErrorBody(encodeErrorBody(thrown));
 * assert.ok(revived instanceof RemoteError);
 * assert.equal(revived.name, "TypeError");
 * assert.equal((revived.cause as Error).message, "too big");
 * ```
 *
 * @module
 */

import { MethodNotFoundError, RemoteError } from "../errors.ts";
import { fittedText } from "../_utf8.ts";

/** The deepest `cause` chain sent; deeper causes are dropped. */
export const MAX_ERROR_CAUSE_DEPTH = 8;

/**
 * An error class a peer's errors can be revived as. It is constructed with
 * `(message, { cause })`; a constructor that throws on that is bypassed, and the instance
 * built from its prototype.
 */
export type ErrorClass = new (...args: never[]) => Error;

/** An error's wire form (docs/protocol.md §8). */
export interface WireError {
  /** The error's class name. */
  name: string;
  /** Its message. */
  message: string;
  /** A machine-readable code. */
  code?: string;
  /** Any JSON value attached by the application. */
  data?: unknown;
  /** The stack trace, only towards a trusted peer. */
  stack?: string;
  /** The error's cause, recursively. */
  cause?: WireError;
}

/** Options for {@linkcode encodeErrorBody}. */
export interface EncodeErrorOptions {
  /**
   * Whether to send stack traces: only for a peer you trust with them.
   *
   * @default {false}
   */
  stack?: boolean;
  /**
   * The largest body to produce, in bytes. A bigger error loses, until it fits: its stacks,
   * then its `data`, then its `cause` chain, then the end of its message (which then ends
   * with "…"), then the end of its name and code.
   *
   * @default {Infinity}
   */
  maxBytes?: number;
  /** A code to set when the error carries none (e.g. `"internal"`). */
  defaultCode?: string;
}

/** Options for {@linkcode decodeErrorBody}. */
export interface DecodeErrorOptions {
  /** Classes to revive errors as, by their `name`. Others become {@linkcode RemoteError}. */
  classes?: ReadonlyMap<string, ErrorClass>;
  /** The method called, so `method_not_found` errors can name it. */
  method?: string;
  /**
   * Whether to keep the stack traces the body carries (as `remoteStack`): only from a peer
   * you trust. Otherwise they are dropped at every level of the `cause` chain.
   *
   * @default {false}
   */
  stack?: boolean;
}

const encoder = new TextEncoder();
// Fatal, and a byte order mark kept: a body that is not UTF-8 JSON text is malformed (§8).
const decoder = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/**
 * Encodes a thrown value as an ERROR body: UTF-8 JSON.
 *
 * @param error What was thrown (an `Error` or any other value).
 * @param options Stack, size and default-code options.
 * @returns The body bytes.
 *
 * @example
 * ```ts
 * import { encodeErrorBody } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * const body = encodeErrorBody(Object.assign(new Error("nope"), { code: "E_NOPE" }));
 * assert.deepEqual(JSON.parse(new TextDecoder().decode(body)), {
 *   name: "Error",
 *   message: "nope",
 *   code: "E_NOPE",
 * });
 * ```
 */
export function encodeErrorBody(error: unknown, options: EncodeErrorOptions = {}): Uint8Array {
  const wire = toWire(error, options.stack ?? false, 0, options.defaultCode);
  const maxBytes = options.maxBytes ?? Infinity;
  const bytes = encoder.encode(JSON.stringify(wire));
  return bytes.length <= maxBytes ? bytes : fitted(wire, maxBytes);
}

/**
 * `wire` shrunk to `maxBytes` at most by the steps of docs/protocol.md §8, each taken only
 * while the body is still too big: stacks at every level, then data at every level, then
 * causes one level at a time from the deepest, then the end of the message (marked "…"),
 * then the code, then the end of the name. Two senders that follow it send the same bytes.
 */
function fitted(wire: WireError, maxBytes: number): Uint8Array {
  const fits = () => size(wire) <= maxBytes;
  const levels: WireError[] = [];
  for (let level: WireError | undefined = wire; level; level = level.cause) levels.push(level);
  for (const level of levels) delete level.stack;
  if (fits()) return encode(wire);
  for (const level of levels) delete level.data;
  if (fits()) return encode(wire);
  while (levels.length > 1) {
    levels.pop();
    delete levels[levels.length - 1].cause;
    if (fits()) return encode(wire);
  }
  shorten(wire, "message", "…", fits, maxBytes);
  if (fits()) return encode(wire);
  delete wire.code;
  if (fits()) return encode(wire);
  shorten(wire, "name", "", fits, maxBytes);
  return encode(wire);
}

/**
 * Sets `wire[key]` to its longest start, in whole code points and strictly shorter than it
 * is, that fits followed by `mark`; to "" when none does.
 */
function shorten(
  wire: WireError,
  key: "message" | "name",
  mark: string,
  fits: () => boolean,
  maxBytes: number,
) {
  wire[key] = fittedText(wire[key], mark, (candidate) => {
    wire[key] = candidate;
    return fits();
  }, maxBytes);
}

function size(wire: WireError): number {
  return encode(wire).length;
}

function encode(wire: WireError): Uint8Array {
  return encoder.encode(JSON.stringify(wire));
}

/**
 * Decodes an ERROR body into an error: a registered class when its `name` matches, a
 * {@linkcode MethodNotFoundError} for code `method_not_found`, else a {@linkcode RemoteError};
 * causes are revived the same way. A body that is not a valid error object becomes a
 * `RemoteError` saying so, never an exception.
 *
 * @param body The ERROR body.
 * @param options Registered classes and the method called.
 * @returns The revived error.
 *
 * @example
 * ```ts
 * import { decodeErrorBody, encodeErrorBody } from "@conduit/ipc/channel";
 * import assert from "node:assert/strict";
 *
 * class QuotaError extends Error {
 *   override name = "QuotaError";
 * }
 * const revived = decodeErrorBody(encodeErrorBody(new QuotaError("over quota")), {
 *   classes: new Map([["QuotaError", QuotaError]]),
 * });
 * assert.ok(revived instanceof QuotaError);
 * assert.equal(revived.message, "over quota");
 * ```
 */
export function decodeErrorBody(body: Uint8Array, options: DecodeErrorOptions = {}): Error {
  let parsed: unknown;
  try {
    parsed = JSON.parse(decoder.decode(body));
  } catch {
    parsed = undefined;
  }
  return revive(parsed, options, 0);
}

/** `error`'s wire form, its members in the order of docs/protocol.md §8. */
function toWire(
  error: unknown,
  stack: boolean,
  depth: number,
  defaultCode?: string,
): WireError {
  if (typeof error !== "object" || error === null) {
    const wire: WireError = { name: "Error", message: String(error) };
    if (defaultCode !== undefined) wire.code = defaultCode;
    return wire;
  }
  const source = error as Record<string, unknown>;
  const wire: WireError = {
    name: typeof source.name === "string" ? source.name : "Error",
    message: typeof source.message === "string" ? source.message : String(error),
  };
  const code = typeof source.code === "string" ? source.code : defaultCode;
  if (code !== undefined) wire.code = code;
  if (source.data !== undefined && isJsonable(source.data)) wire.data = source.data;
  const trace = error instanceof RemoteError ? error.remoteStack ?? error.stack : source.stack;
  if (stack && typeof trace === "string") wire.stack = trace;
  if (source.cause !== undefined && depth + 1 < MAX_ERROR_CAUSE_DEPTH) {
    wire.cause = toWire(source.cause, stack, depth + 1);
  }
  return wire;
}

function isJsonable(value: unknown): boolean {
  try {
    return JSON.stringify(value) !== undefined;
  } catch {
    return false;
  }
}

function revive(value: unknown, options: DecodeErrorOptions, depth: number): Error {
  if (!isObject(value)) {
    return new RemoteError({ name: "Error", message: "The peer sent a malformed error" });
  }
  const wire = value;
  const name = typeof wire.name === "string" ? wire.name : "Error";
  const message = typeof wire.message === "string" ? wire.message : "";
  const code = typeof wire.code === "string" ? wire.code : undefined;
  const stack = options.stack === true && typeof wire.stack === "string" ? wire.stack : undefined;
  // A cause that is not an error object (null, a string) is no cause.
  const cause = isObject(wire.cause) && depth + 1 < MAX_ERROR_CAUSE_DEPTH
    ? revive(wire.cause, options, depth + 1)
    : undefined;
  const causeOption = cause === undefined ? undefined : { cause };

  const registered = options.classes?.get(name);
  if (registered !== undefined) {
    const error = construct(registered, message, causeOption);
    if (error.name !== name) error.name = name;
    if (code !== undefined) Object.assign(error, { code });
    if (wire.data !== undefined) Object.assign(error, { data: wire.data });
    if (stack !== undefined) Object.assign(error, { remoteStack: stack });
    return error;
  }
  if (code === "method_not_found" && depth === 0) {
    const error = new MethodNotFoundError(options.method ?? "", message);
    if (causeOption) Object.assign(error, causeOption);
    if (stack !== undefined) Object.assign(error, { remoteStack: stack });
    return error;
  }
  return new RemoteError({ name, message, code, data: wire.data, stack }, causeOption);
}

/** Whether `value` is a JSON object (not null, not an array). */
function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

function construct(cls: ErrorClass, message: string, options: ErrorOptions | undefined): Error {
  try {
    const error = Reflect.construct(cls, [message, options]) as Error;
    if (error.message !== message) error.message = message;
    if (options && error.cause === undefined) Object.assign(error, options);
    return error;
  } catch {
    // A constructor with another signature: build the instance without running it.
    const error = Object.create(cls.prototype) as Error;
    Object.assign(error, { message, ...options });
    return error;
  }
}
