/**
 * Error classes shared by conduit's layers. Every error conduit throws on purpose is a
 * {@linkcode ConduitError}, so `err instanceof ConduitError` tells conduit's own failures from
 * bugs; subclasses name the condition a caller may want to handle.
 *
 * @example Telling a framing error apart
 * ```ts
 * import { ConduitError, FrameTooLargeError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new FrameTooLargeError(70_000_000, 67_108_864);
 * assert.ok(err instanceof ConduitError);
 * assert.equal(err.message, "Frame of 70000000 bytes exceeds maxFrameBytes (67108864)");
 * ```
 *
 * @module
 */

import { printable } from "./_utf8.ts";

/**
 * Base class of every error conduit raises on purpose.
 *
 * @example
 * ```ts
 * import { ConduitError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new ConduitError("something went wrong");
 * assert.equal(err.name, "ConduitError");
 * ```
 */
export class ConduitError extends Error {
  /**
   * Creates an error whose `name` is the class name.
   *
   * @param message What went wrong.
   * @param options Standard error options (`cause`).
   */
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

/**
 * The byte stream does not hold valid frames: the base of the framing errors.
 *
 * @example
 * ```ts
 * import { FramingError, TruncatedFrameError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * assert.ok(new TruncatedFrameError(10) instanceof FramingError);
 * ```
 */
export class FramingError extends ConduitError {}

/**
 * A frame's header announces more bytes than `maxFrameBytes` allows. Raised from the header,
 * before any of the frame is buffered.
 *
 * @example
 * ```ts
 * import { FrameTooLargeError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new FrameTooLargeError(2048, 1024);
 * assert.equal(err.size, 2048);
 * assert.equal(err.limit, 1024);
 * ```
 */
export class FrameTooLargeError extends FramingError {
  /** The size the frame announced, in bytes. */
  readonly size: number;
  /** The limit it exceeded, in bytes. */
  readonly limit: number;
  /**
   * The first bytes of the frame as they arrived, header included (up to 64), when the
   * decoder kept them: they tell a peer that wrote text, not frames, from a frame too large.
   */
  readonly received: Uint8Array | undefined;

  /**
   * Creates the error; the message names the size, the limit and the option that set it.
   *
   * @param size The size the frame announced, in bytes.
   * @param limit The limit in force.
   * @param options The limit's name and the bytes received; see
   * {@linkcode FrameTooLargeErrorOptions}.
   */
  constructor(size: number, limit: number, options: FrameTooLargeErrorOptions = {}) {
    super(`Frame of ${size} bytes exceeds ${options.limitName ?? "maxFrameBytes"} (${limit})`);
    this.size = size;
    this.limit = limit;
    this.received = options.received;
  }
}

/**
 * Options for {@linkcode FrameTooLargeError}.
 *
 * @example
 * ```ts
 * import { FrameTooLargeError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new FrameTooLargeError(20, 16, { limitName: "maxLineBytes" });
 * assert.equal(err.message, "Frame of 20 bytes exceeds maxLineBytes (16)");
 * ```
 */
export interface FrameTooLargeErrorOptions {
  /**
   * The name of the option that set the limit, for the message.
   *
   * @default {"maxFrameBytes"}
   */
  limitName?: string;
  /**
   * The first bytes of the frame as they arrived, header included, for
   * {@linkcode FrameTooLargeError.received}.
   *
   * @default {undefined}
   */
  received?: Uint8Array;
}

/**
 * The stream ended in the middle of a frame.
 *
 * @example
 * ```ts
 * import { TruncatedFrameError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * assert.equal(new TruncatedFrameError(3).missing, 3);
 * assert.equal(new TruncatedFrameError(3).message, "Stream ended mid-frame: 3 more byte(s) were expected");
 * ```
 */
export class TruncatedFrameError extends FramingError {
  /** How many more bytes the unfinished frame needed (at least; a header may be cut too). */
  readonly missing: number;

  /**
   * Creates the error for a stream that ended `missing` bytes short.
   *
   * @param missing How many bytes were missing when the stream ended.
   * @param what What the stream ended inside of, for the message: by default the bytes the
   * frame still needed; a line-delimited stream, which has no length to fall short of, names
   * the line and its bytes so far.
   */
  constructor(missing: number, what = `${missing} more byte(s) were expected`) {
    super(`Stream ended mid-frame: ${what}`);
    this.missing = missing;
  }
}

/**
 * The bytes are not valid for the framing in use (for example a line that is not JSON, or a
 * malformed Content-Length header).
 *
 * @example
 * ```ts
 * import { FrameSyntaxError, FramingError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * assert.ok(new FrameSyntaxError("bad header") instanceof FramingError);
 * ```
 */
export class FrameSyntaxError extends FramingError {}

/**
 * A transport was used after it closed, or its peer went away.
 *
 * @example
 * ```ts
 * import { ConduitError, TransportClosedError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * assert.ok(new TransportClosedError("closed") instanceof ConduitError);
 * ```
 */
export class TransportClosedError extends ConduitError {}

/**
 * A shape the peer sent that breaks a `ShapeLimits` bound or conduit's rules, or a
 * body that uses a shape the peer never defined. The channel treats it as a protocol error.
 *
 * @example
 * ```ts
 * import { ShapeDecoder } from "@conduit/ipc/codecs/structured";
 * import { ShapeError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const table = new ShapeDecoder({ maxKeysPerShape: 2 });
 * assert.throws(
 *   () => table.define(0, ["a", "b", "c"]),
 *   (err) => err instanceof ShapeError && err.message.includes("maxKeysPerShape (2)"),
 * );
 * ```
 */
export class ShapeError extends ConduitError {}

/**
 * A codec could not encode or decode a value. Names the codec and wraps the underlying cause.
 *
 * @example
 * ```ts
 * import { CodecError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new CodecError("json", "decode", new SyntaxError("Unexpected token"));
 * assert.equal(err.codec, "json");
 * assert.equal(err.operation, "decode");
 * assert.match(err.message, /json codec could not decode: Unexpected token/);
 *
 * // What failed, said before the codec's own words (the channel names the method and side).
 * const named = new CodecError("json", "decode", err, 'The result of "add" from the peer');
 * assert.equal(
 *   named.message,
 *   'The result of "add" from the peer: json codec could not decode: Unexpected token',
 * );
 * assert.equal(named.cause, err);
 * ```
 */
export class CodecError extends ConduitError {
  /** The `name` of the codec that failed. */
  readonly codec: string;
  /** Whether encoding or decoding failed. */
  readonly operation: "encode" | "decode";

  /**
   * Creates the error, naming the codec and the operation and keeping the cause.
   *
   * @param codec The codec's `name`.
   * @param operation `"encode"` or `"decode"`.
   * @param cause The underlying error; a `CodecError`'s message is kept as it is.
   * @param subject What could not be encoded or decoded (the value of which method, on which
   * side), said first in the message.
   */
  constructor(
    codec: string,
    operation: "encode" | "decode",
    cause: unknown,
    subject?: string,
  ) {
    // A decoder's words may quote the peer's bytes (V8's JSON.parse does): escaped for logs.
    const detail = printable(cause instanceof Error ? cause.message : String(cause));
    const words = cause instanceof CodecError
      ? detail
      : `${codec} codec could not ${operation}: ${detail}`;
    super(subject === undefined ? words : `${subject}: ${words}`, { cause });
    this.codec = codec;
    this.operation = operation;
  }
}

/** The fields of an error as they cross the wire (docs/protocol.md §8). */
export interface RemoteErrorFields {
  /** The remote error's class name, e.g. `"TypeError"`. */
  name: string;
  /** Its message. */
  message: string;
  /**
   * A machine-readable code, when the remote error had one: a string on conduit channels, a
   * JSON-RPC error code (a number) on JSON-RPC channels.
   */
  code?: string | number;
  /** Application data attached to the remote error (any JSON value). */
  data?: unknown;
  /** The remote stack trace, only sent by a peer that trusts this one. */
  stack?: string;
}

/**
 * An error thrown by the peer's handler, revived on this side. `name`, `message`, `code` and
 * `data` are the remote error's; `remoteStack` is its stack when the peer trusts us; `cause`
 * is the remote cause chain, revived the same way.
 *
 * `name`, `message` and `code` are the peer's text verbatim, as vscode-jsonrpc and gRPC keep
 * them: they may hold line breaks or terminal escapes, so escape them before they go into a log
 * line. The messages conduit writes around a peer's words (a GOODBYE's or a CANCEL's reason)
 * have them escaped already.
 *
 * @example
 * ```ts
 * import { RemoteError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new RemoteError({ name: "TypeError", message: "bad", code: "E_BAD", data: { n: 1 } });
 * assert.equal(err.name, "TypeError");
 * assert.equal(err.code, "E_BAD");
 * assert.deepEqual(err.data, { n: 1 });
 * ```
 */
export class RemoteError extends ConduitError {
  /** The remote error's code, if any: a number for a JSON-RPC error (`-32601`…). */
  readonly code: string | number | undefined;
  /** The remote error's attached data, if any. */
  readonly data: unknown;
  /** The remote stack trace, present only when the peer trusts this side. */
  readonly remoteStack: string | undefined;

  /**
   * Creates the error from the fields that crossed the wire.
   *
   * @param fields The error's fields as received.
   * @param options Standard error options: `cause` is the revived remote cause.
   */
  constructor(fields: RemoteErrorFields, options?: ErrorOptions) {
    super(fields.message, options);
    this.name = fields.name;
    this.code = fields.code;
    this.data = fields.data;
    this.remoteStack = fields.stack;
  }
}

/**
 * The peer serves no method of that name (error code `method_not_found`).
 *
 * @example
 * ```ts
 * import { MethodNotFoundError, RemoteError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const err = new MethodNotFoundError("nope");
 * assert.ok(err instanceof RemoteError);
 * assert.equal(err.method, "nope");
 * assert.equal(err.code, "method_not_found");
 * ```
 */
export class MethodNotFoundError extends RemoteError {
  /** The method that was not found. */
  readonly method: string;

  /**
   * Creates the error for a method the peer does not serve.
   *
   * @param method The method name that was called.
   * @param message The message, defaulting to one that names the method.
   */
  constructor(method: string, message = `No method named "${method}"`) {
    super({ name: "MethodNotFoundError", message, code: "method_not_found" });
    this.method = method;
  }
}
