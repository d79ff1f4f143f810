/**
 * The Protobuf codec, on `npm:protobufjs`: one message type from a `.proto` schema, with plain
 * objects on the JavaScript side.
 *
 * Decoded messages are plain objects holding every field of the type: unset scalars at their
 * default (`0`, `""`, `false`, an empty `Uint8Array`), unset message fields `null`, repeated
 * fields `[]` and maps `{}`; `optional` and `oneof` members only when they were set. Enums
 * decode as numbers (encode accepts numbers or names); 64-bit integers as `bigint` or decimal
 * strings (option `int64`); `bytes` as `Uint8Array` views over the input. Field names follow
 * protobufjs: camelCase unless `keepCase` is set.
 *
 * Protobuf has no framing or checksum: many byte strings are valid messages, and a message cut
 * at a field boundary is a valid shorter message. Bytes that are not a valid message (a bad
 * wire type, a length past the end, invalid UTF-8 in a string, nesting past the protobufjs
 * recursion limit of 100) are a `CodecError`.
 *
 * @example
 * ```ts
 * import { protobufCodec } from "@conduit/ipc/codecs/protobuf";
 * import assert from "node:assert/strict";
 *
 * const codec = protobufCodec<{ id: bigint; name: string; tags: string[] }>({
 *   proto: `syntax = "proto3";
 *     package demo;
 *     message User { int64 id = 1; string name = 2; repeated string tags = 3; }`,
 *   type: "demo.User",
 * });
 * const bytes = codec.encode({ id: 2n ** 60n, name: "ada", tags: ["x"] });
 * assert.deepStrictEqual(codec.decode(bytes), { id: 2n ** 60n, name: "ada", tags: ["x"] });
 * assert.equal(codec.name, "protobuf:demo.User");
 * ```
 *
 * @module
 */

import { type IConversionOptions, parse, Reader, Root, Type } from "protobufjs";
import { CodecError } from "../errors.ts";
import { unknownsCopier } from "./_protobuf_unknown.ts";
import { type Int64Form, messageVerifier } from "./_protobuf_verify.ts";
import type { Codec } from "./types.ts";

export type { Codec };

/**
 * A protobufjs schema object: a `Root` (from protobufjs's `parse` or `Root.fromJSON`) or a
 * message `Type`, from the same protobufjs this module uses. Typed by the members the codec
 * relies on, so this module's API does not carry protobufjs's declarations.
 */
export interface ProtobufSchemaObject {
  /** The object's fully qualified name (`""` for a root, `".pkg.Msg"` for a type). */
  readonly fullName: string;
  /** Resolves every type reference below the object; throws if one is missing. */
  resolveAll(): unknown;
}

/** The default `int64` form: `"bigint"`. */
export const DEFAULT_PROTOBUF_INT64: "bigint" | "string" = "bigint";

/** What {@linkcode protobufCodec} encodes, and how. */
export interface ProtobufCodecOptions {
  /** A `.proto` source, or a protobufjs `Root` holding the type, or the `Type` itself. */
  proto: string | ProtobufSchemaObject;
  /** The fully qualified message type name (`"pkg.Msg"`); optional when `proto` is a `Type`. */
  type?: string;
  /**
   * How 64-bit integer fields (`int64`, `uint64`, `sint64`, `fixed64`, `sfixed64`) appear in
   * plain objects: `bigint`, or decimal strings for peers that speak JSON.
   *
   * @default {DEFAULT_PROTOBUF_INT64}
   */
  int64?: "bigint" | "string";
  /**
   * Whether `encode` checks the value against the schema first: field types, integer ranges,
   * unknown fields, well-formed strings, oneofs. A value that fails is a `CodecError`. With
   * `false` the value is trusted and protobufjs coerces what does not fit (`String(x)`,
   * `x | 0`, 64-bit values wrapped), which is faster but silent.
   *
   * @default {true}
   */
  verify?: boolean;
  /**
   * Whether field names stay as written in a `.proto` source instead of becoming camelCase.
   *
   * @default {false}
   */
  keepCase?: boolean;
}

/**
 * Creates a codec for one Protobuf message type. Its `name` is `protobuf:<type>` (for example
 * `protobuf:demo.User`), so peers using different message types fail the handshake.
 *
 * @typeParam T The plain-object shape of the message.
 * @param options The schema, the message type and the conversions.
 * @returns A codec for that message type.
 * @throws {TypeError} When the schema does not parse or has no such message type.
 *
 * @example A value that does not fit the schema is a CodecError
 * ```ts
 * import { protobufCodec } from "@conduit/ipc/codecs/protobuf";
 * import { CodecError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const codec = protobufCodec({
 *   proto: `syntax = "proto3"; message Point { int32 x = 1; int32 y = 2; }`,
 *   type: "Point",
 * });
 * assert.throws(() => codec.encode({ x: 1, y: "2" }), CodecError);
 * assert.throws(() => codec.encode({ x: 2 ** 40, y: 0 }), CodecError);
 * assert.throws(() => codec.decode(new Uint8Array([0x08])), CodecError); // cut short
 * ```
 */
export function protobufCodec<T = Record<string, unknown>>(
  options: ProtobufCodecOptions,
): Codec<T> {
  return new _ProtobufCodec<T>(options);
}

class _ProtobufCodec<T> implements Codec<T> {
  readonly name: string;
  readonly #type: Type;
  readonly #int64: Int64Form;
  readonly #verify: ((value: unknown) => string | undefined) | undefined;
  readonly #toObject: IConversionOptions;
  /** Whether encoding needs protobufjs's fromObject (bigint and string longs, enum names). */
  readonly #convert: boolean;
  readonly #fixBytes: _BytesFixer | undefined;
  readonly #copyUnknowns: (from: unknown, to: unknown) => void;
  readonly #reader = new _KeepingReader();

  constructor(options: ProtobufCodecOptions) {
    this.#type = resolveType(options);
    this.#int64 = options.int64 ?? DEFAULT_PROTOBUF_INT64;
    if (this.#int64 !== "bigint" && this.#int64 !== "string") {
      throw new TypeError(`int64 must be "bigint" or "string", got ${String(options.int64)}`);
    }
    this.#verify = options.verify ?? true ? messageVerifier(this.#type, this.#int64) : undefined;
    this.#toObject = { longs: this.#int64 === "bigint" ? BigInt : String, defaults: true };
    this.#convert = needsConversion(this.#type, new Set());
    this.#fixBytes = bytesFixer(this.#type, new Map());
    this.#copyUnknowns = unknownsCopier(this.#type);
    this.name = `protobuf:${this.#type.fullName.replace(/^\./, "")}`;
  }

  encode(value: T): Uint8Array {
    try {
      const problem = this.#verify?.(value);
      if (problem !== undefined) throw new TypeError(problem);
      let message = value as Record<string, unknown>;
      if (this.#convert) {
        message = this.#type.fromObject(message);
        this.#copyUnknowns(value, message);
      }
      const bytes = this.#type.encode(message).finish();
      // protobufjs hands out Node Buffers; callers get a plain view of the same bytes.
      return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    } catch (cause) {
      throw new CodecError(this.name, "encode", cause);
    }
  }

  decode(bytes: Uint8Array): T {
    try {
      // A Buffer would make protobufjs slice `bytes` fields as Buffers; a plain view does not.
      const input = bytes.constructor === Uint8Array
        ? bytes
        : new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const reader = this.#reader.reset(input);
      const message = this.#type.decode(reader);
      const object = this.#type.toObject(message, this.#toObject);
      if (reader.sliced) this.#copyUnknowns(message, object);
      this.#fixBytes?.(object);
      return object as T;
    } catch (cause) {
      throw new CodecError(this.name, "decode", cause);
    } finally {
      this.#reader.reset(EMPTY); // not to keep the input alive
    }
  }
}

/**
 * A reader that keeps unknown fields (protobufjs drops them unless told) and notes whether it
 * handed out any raw slice: an unknown field's bytes, or a `bytes` field's. Without one the
 * decoded message holds no unknown fields, and the walk that copies them can be skipped.
 */
class _KeepingReader extends Reader {
  sliced = false;

  constructor() {
    super(EMPTY);
    this.discardUnknown = false;
  }

  /** Points this reader at the start of `input`: one reader serves every decode of a codec
   * (a new one per message cost a small message's decode a third more). */
  reset(input: Uint8Array): this {
    this.buf = input;
    this.pos = 0;
    this.len = input.length;
    (this as unknown as { view: DataView | null }).view = null;
    this.sliced = false;
    return this;
  }

  override raw(start: number, end: number): Uint8Array {
    this.sliced = true;
    return super.raw(start, end);
  }
}

const EMPTY = new Uint8Array(0);

function resolveType(options: ProtobufCodecOptions): Type {
  const { proto, type } = options;
  if (proto instanceof Type && type === undefined) {
    proto.root.resolveAll();
    return proto;
  }
  if (type === undefined) throw new TypeError("protobufCodec needs a message type name");
  let root: Root;
  if (typeof proto === "string") {
    try {
      root = parse(proto, { keepCase: options.keepCase ?? false }).root;
    } catch (cause) {
      throw new TypeError(`The .proto source does not parse: ${message(cause)}`, { cause });
    }
  } else if (proto instanceof Root || proto instanceof Type) {
    root = proto instanceof Type ? proto.root : proto;
  } else {
    throw new TypeError("proto must be a .proto source, or a Root or Type of protobufjs@8");
  }
  try {
    root.resolveAll();
    return root.lookupType(type);
  } catch (cause) {
    throw new TypeError(`No message type "${type}" in the schema: ${message(cause)}`, { cause });
  }
}

function message(cause: unknown): string {
  return cause instanceof Error ? cause.message : String(cause);
}

/** Whether any reachable field is 64-bit or an enum (the cases plain encode gets wrong). */
function needsConversion(type: Type, seen: Set<Type>): boolean {
  if (seen.has(type)) return false;
  seen.add(type);
  for (const field of type.fieldsArray) {
    if (field.long || (field.map && isLongType(field))) return true;
    const resolved = field.resolvedType;
    if (resolved instanceof Type) {
      if (needsConversion(resolved, seen)) return true;
    } else if (resolved !== null) {
      return true;
    }
  }
  return false;
}

function isLongType(field: { type: string }): boolean {
  return /^(u|s|sf|f)?int64$|^s?fixed64$/.test(field.type);
}

type _BytesFixer = (object: Record<string, unknown>) => void;

/**
 * Builds a function that turns the empty Buffers protobufjs uses as `bytes` defaults into
 * plain empty `Uint8Array`s, visiting only the fields that can lead to a `bytes` field;
 * `undefined` when the type reaches none.
 */
function bytesFixer(type: Type, cache: Map<Type, _BytesFixer>): _BytesFixer | undefined {
  if (!reachesBytes(type, new Set())) return undefined;
  const cached = cache.get(type);
  if (cached !== undefined) return cached;
  const steps: _BytesFixer[] = [];
  const fix: _BytesFixer = (object) => {
    for (const step of steps) step(object);
  };
  cache.set(type, fix); // before the fields, so a recursive type finds itself
  for (const field of type.fieldsArray) {
    const name = field.name;
    if (field.type === "bytes" && !field.repeated && !field.map) {
      steps.push((object) => {
        const value = object[name];
        if (value instanceof Uint8Array && value.constructor !== Uint8Array) {
          object[name] = new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
        }
      });
      continue;
    }
    const inner = field.resolvedType instanceof Type
      ? bytesFixer(field.resolvedType, cache)
      : undefined;
    if (inner === undefined) continue;
    steps.push((object) => {
      const value = object[name];
      if (value === null || value === undefined) return;
      if (field.repeated) { for (const item of value as Record<string, unknown>[]) inner(item); }
      else if (field.map) { for (const item of Object.values(value)) inner(item); }
      else inner(value as Record<string, unknown>);
    });
  }
  return fix;
}

function reachesBytes(type: Type, seen: Set<Type>): boolean {
  if (seen.has(type)) return false;
  seen.add(type);
  for (const field of type.fieldsArray) {
    if (field.type === "bytes" && !field.repeated && !field.map) return true;
    if (field.resolvedType instanceof Type && reachesBytes(field.resolvedType, seen)) return true;
  }
  return false;
}
