/**
 * The Apache Arrow codec: tables and record batches in the Arrow IPC stream format, on
 * `npm:apache-arrow@21.2.0`.
 *
 * - {@linkcode arrowCodec} encodes a whole `Table` as one IPC stream (schema, dictionaries,
 *   record batches, end-of-stream marker); {@linkcode arrowRecordBatchCodec} does the same
 *   for a single `RecordBatch`.
 * - {@linkcode ArrowBatchEncoder} and {@linkcode ArrowBatchDecoder} split one stream across
 *   many messages: the schema travels once, in the first message, and every message after it
 *   carries one record batch (plus any dictionary it needs). The messages concatenated are
 *   themselves a valid IPC stream.
 * - {@linkcode tableFromColumns} and {@linkcode tableFromRows} build tables from plain arrays.
 *
 * Decoding is zero-copy: the decoded columns are views over the input bytes (strings and rows
 * are materialised only when read), so **keep the input bytes unchanged while the table is in
 * use**, or pass `copy: true`. Typed arrays need aligned offsets, so an input whose
 * `byteOffset` is not a multiple of 8 has each message body copied once. Malformed, truncated
 * or out-of-order input is a `CodecError` naming the codec `"arrow"`, checked per message and
 * per column (never per row): the end-of-stream marker is required, so a stream cut at a
 * message boundary is an error rather than a shorter table. Arrow can describe many rows in
 * few bytes (a Null column has no buffers at all), so check `numRows` before iterating a table
 * from an untrusted peer.
 *
 * Use the `apache-arrow` version this module uses (21.2.0) to build the values you encode:
 * tables from another copy of the library are rejected.
 *
 * @example Round trip a table
 * ```ts
 * import { arrowCodec, tableFromColumns } from "@conduit/ipc/codecs/arrow";
 * import assert from "node:assert/strict";
 *
 * const codec = arrowCodec();
 * const table = tableFromColumns({ id: Int32Array.of(1, 2, 3), name: ["a", "b", null] });
 * const decoded = codec.decode(codec.encode(table));
 * assert.equal(decoded.numRows, 3);
 * assert.deepEqual(decoded.getChild("name")?.toArray(), ["a", "b", null]);
 * ```
 *
 * @module
 */

import {
  type CompressionType,
  DataType,
  Field,
  RecordBatch,
  type Schema,
  Table,
  util,
  Vector,
  vectorFromArray,
} from "apache-arrow";
import { CodecError } from "../errors.ts";
import type { Codec } from "./types.ts";
import { CollectingWriter, EOS_MARKER, fieldDepth, IpcReader } from "./_arrow_ipc.ts";
import { type ArrowCompression, compressionType } from "./arrow_compression.ts";

export type { ArrowCompression };
export type { Codec };

const NAME = "arrow";

/**
 * The deepest column nesting {@linkcode arrowCodec} accepts by default: containers (List,
 * Struct, Map, …) around a leaf, a top-level primitive column being depth 0.
 */
export const DEFAULT_ARROW_MAX_DEPTH = 64;

/** The most bytes one compressed message body may decompress to, by default: 1 GiB. */
export const DEFAULT_ARROW_MAX_UNCOMPRESSED_BYTES: number = 1024 * 1024 * 1024;

/** Options of the writing side: how message bodies are compressed. */
export interface ArrowWriteOptions {
  /**
   * Compress record batch and dictionary bodies, buffer by buffer, with LZ4 (frame format) or
   * Zstandard, as pyarrow's `IpcWriteOptions(compression=...)` does. A buffer that does not
   * shrink is written raw, as the format allows. Decoding needs no option: compressed streams
   * are recognised from their headers.
   *
   * @example
   * ```ts
   * import { arrowCodec, tableFromColumns } from "@conduit/ipc/codecs/arrow";
   * import assert from "node:assert/strict";
   *
   * const table = tableFromColumns({ n: Int32Array.from({ length: 1000 }, (_, i) => i % 10) });
   * const small = arrowCodec({ compression: "zstd" }).encode(table);
   * assert.ok(small.length < arrowCodec().encode(table).length);
   * assert.equal(arrowCodec().decode(small).getChild("n")?.get(999), 9);
   * ```
   *
   * @default {undefined}
   */
  compression?: ArrowCompression;
}

/** Options of {@linkcode arrowCodec}, {@linkcode arrowRecordBatchCodec} and
 * {@linkcode ArrowBatchDecoder}. */
export interface ArrowCodecOptions extends ArrowWriteOptions {
  /**
   * The deepest column nesting that encode and decode accept (containers around a leaf).
   * Deeper schemas are a `CodecError`, checked before any data is read.
   *
   * @default {DEFAULT_ARROW_MAX_DEPTH}
   */
  maxDepth?: number;
  /**
   * Copy the input before decoding, so the decoded value does not depend on the input bytes
   * staying unchanged (for example when a transport reuses its read buffer).
   *
   * @default {false}
   */
  copy?: boolean;
  /**
   * The most bytes the buffers of one compressed message body may decompress to (an LZ4 or
   * Zstandard stream states its lengths; they are checked before allocating).
   *
   * @default {DEFAULT_ARROW_MAX_UNCOMPRESSED_BYTES}
   */
  maxUncompressedBytes?: number;
}

/**
 * Creates a codec for Arrow tables in the IPC stream format. `decode` returns a table whose
 * columns are views over the input (see the module doc) and reads streams from other Arrow
 * implementations (tested against pyarrow), LZ4- and Zstandard-compressed bodies included;
 * big-endian data, pre-0.15 streams (without continuation markers) and what apache-arrow
 * cannot represent (RunEndEncoded, ListView, LargeListView, 64-bit dictionary indices) are a
 * `CodecError` naming them.
 *
 * @param options Depth limit and copy mode.
 * @returns A reusable codec named `"arrow"`.
 *
 * @example
 * ```ts
 * import { arrowCodec, tableFromRows } from "@conduit/ipc/codecs/arrow";
 * import assert from "node:assert/strict";
 *
 * const codec = arrowCodec();
 * const bytes = codec.encode(tableFromRows([{ x: 1, tag: "a" }, { x: 2, tag: "b" }]));
 * const table = codec.decode(bytes);
 * assert.deepEqual(table.get(1)?.toJSON(), { x: 2, tag: "b" });
 * ```
 */
export function arrowCodec(options: ArrowCodecOptions = {}): Codec<Table> {
  const settings = resolve(options);
  const copy = options.copy ?? false;
  return {
    name: NAME,
    encode(table: Table): Uint8Array {
      try {
        if (!(table instanceof Table)) throw new TypeError(expected("Table", table));
        return encodeStream(table.schema, table.batches, settings);
      } catch (cause) {
        throw asCodecError("encode", cause);
      }
    },
    decode(bytes: Uint8Array): Table {
      try {
        const { schema, batches } = decodeStream(copy ? bytes.slice() : bytes, settings);
        return new Table(schema, batches);
      } catch (cause) {
        throw asCodecError("decode", cause);
      }
    },
  };
}

/**
 * Creates a codec for a single Arrow record batch, as an IPC stream holding its schema and
 * that one batch. `decode` rejects streams with more than one batch and turns a stream with
 * none into an empty batch of its schema.
 *
 * @param options Depth limit and copy mode.
 * @returns A reusable codec named `"arrow"` (the bytes are an ordinary IPC stream).
 *
 * @example
 * ```ts
 * import { arrowRecordBatchCodec, tableFromColumns } from "@conduit/ipc/codecs/arrow";
 * import assert from "node:assert/strict";
 *
 * const codec = arrowRecordBatchCodec();
 * const [batch] = tableFromColumns({ n: Float64Array.of(0.5, 1.5) }).batches;
 * assert.deepEqual([...codec.decode(codec.encode(batch)).getChild("n")!], [0.5, 1.5]);
 * ```
 */
export function arrowRecordBatchCodec(options: ArrowCodecOptions = {}): Codec<RecordBatch> {
  const settings = resolve(options);
  const copy = options.copy ?? false;
  return {
    name: NAME,
    encode(batch: RecordBatch): Uint8Array {
      try {
        if (!(batch instanceof RecordBatch)) throw new TypeError(expected("RecordBatch", batch));
        return encodeStream(batch.schema, [batch], settings);
      } catch (cause) {
        throw asCodecError("encode", cause);
      }
    },
    decode(bytes: Uint8Array): RecordBatch {
      try {
        const { schema, batches } = decodeStream(copy ? bytes.slice() : bytes, settings);
        if (batches.length > 1) {
          throw new RangeError(`expected one record batch, the stream holds ${batches.length}`);
        }
        return batches[0] ?? new RecordBatch(schema, undefined);
      } catch (cause) {
        throw asCodecError("decode", cause);
      }
    },
  };
}

/** Options of {@linkcode ArrowBatchEncoder}. */
export interface ArrowBatchEncoderOptions extends ArrowWriteOptions {
  /**
   * The stream's schema. Without it, the first batch's schema is used.
   *
   * @default {undefined}
   */
  schema?: ArrowSchema;
  /**
   * The deepest column nesting accepted.
   *
   * @default {DEFAULT_ARROW_MAX_DEPTH}
   */
  maxDepth?: number;
}

/**
 * Encodes a sequence of record batches that share one schema as a series of messages: the
 * first message carries the schema and the first batch, each later one a single batch
 * (preceded by a dictionary batch only when a dictionary changed), and {@linkcode end}
 * returns the end-of-stream marker. Concatenated, the messages form one Arrow IPC stream.
 * An encoder is stateful: use one per stream, with an {@linkcode ArrowBatchDecoder} at the
 * other end.
 *
 * @example
 * ```ts
 * import { ArrowBatchDecoder, ArrowBatchEncoder, tableFromColumns } from "@conduit/ipc/codecs/arrow";
 * import assert from "node:assert/strict";
 *
 * const encoder = new ArrowBatchEncoder();
 * const decoder = new ArrowBatchDecoder();
 * for (let i = 0; i < 3; i++) {
 *   const [batch] = tableFromColumns({ i: Int32Array.of(i, i + 1) }).batches;
 *   const decoded = decoder.decode(encoder.encode(batch));
 *   assert.deepEqual([...decoded!.getChild("i")!], [i, i + 1]);
 * }
 * assert.equal(decoder.decode(encoder.end()), null);
 * ```
 */
export class ArrowBatchEncoder {
  readonly #writer: CollectingWriter;
  readonly #maxDepth: number;
  #schema: Schema | undefined;
  #started = false;
  #ended = false;

  /**
   * Creates an encoder for one batch stream.
   *
   * @param options The schema (optional) and depth limit.
   */
  constructor(options: ArrowBatchEncoderOptions = {}) {
    const settings = resolve(options);
    this.#maxDepth = settings.maxDepth;
    this.#writer = newWriter(settings);
    if (options.schema !== undefined) {
      try {
        checkDepth(options.schema, this.#maxDepth);
      } catch (cause) {
        throw asCodecError("encode", cause);
      }
      this.#schema = options.schema;
    }
  }

  /** The stream's schema, once known. */
  get schema(): ArrowSchema | undefined {
    return this.#schema;
  }

  /**
   * Encodes one record batch as the next message of the stream.
   *
   * @param batch A batch with the stream's schema.
   * @returns The message bytes; the first one also carries the schema.
   */
  encode(batch: RecordBatch): Uint8Array {
    try {
      if (this.#ended) throw new TypeError("the stream has ended: encode after end()");
      if (!(batch instanceof RecordBatch)) throw new TypeError(expected("RecordBatch", batch));
      if (this.#schema === undefined) {
        checkDepth(batch.schema, this.#maxDepth);
        this.#schema = batch.schema;
      }
      const conformed = conform(batch, this.#schema, this.#maxDepth);
      this.#start();
      this.#writer.write(conformed);
      return this.#writer.take();
    } catch (cause) {
      throw asCodecError("encode", cause);
    }
  }

  /**
   * Ends the stream.
   *
   * @returns The end-of-stream marker, preceded by the schema if no batch was encoded.
   */
  end(): Uint8Array {
    if (this.#ended) throw asCodecError("encode", new TypeError("end() called twice"));
    this.#ended = true;
    if (this.#schema === undefined) return EOS_MARKER.slice();
    this.#start();
    this.#writer.writeEos();
    return this.#writer.take();
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#writer.begin(this.#schema!);
  }
}

/**
 * Decodes the messages of an {@linkcode ArrowBatchEncoder} (or of any IPC stream split at
 * record batch boundaries) one at a time, keeping the schema and dictionaries between them.
 * Each decoded batch is a view over its message bytes, and dictionary values over the message
 * that carried them: keep those unchanged while the batches are in use, or pass `copy: true`.
 * A message out of place (a batch before the schema, a second schema, a message after the
 * end) is a `CodecError`, after which the decoder rejects everything.
 *
 * @example
 * ```ts
 * import { ArrowBatchDecoder, ArrowBatchEncoder, tableFromColumns } from "@conduit/ipc/codecs/arrow";
 * import { CodecError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const encoder = new ArrowBatchEncoder();
 * const first = encoder.encode(tableFromColumns({ x: [1] }).batches[0]);
 * const second = encoder.encode(tableFromColumns({ x: [2] }).batches[0]);
 * assert.ok(second.length < first.length); // no schema in the second message
 * assert.throws(() => new ArrowBatchDecoder().decode(second), CodecError);
 * ```
 */
export class ArrowBatchDecoder {
  readonly #reader: IpcReader;
  readonly #copy: boolean;
  #ended = false;
  #failure: unknown;

  /**
   * Creates a decoder for one batch stream.
   *
   * @param options Depth limit and copy mode.
   */
  constructor(options: ArrowCodecOptions = {}) {
    const settings = resolve(options);
    this.#reader = new IpcReader(settings.maxDepth, settings.maxUncompressedBytes);
    this.#copy = options.copy ?? false;
  }

  /** The stream's schema, once its first message has been decoded. */
  get schema(): ArrowSchema | undefined {
    return this.#reader.schema;
  }

  /** Whether the end-of-stream message has been decoded. */
  get ended(): boolean {
    return this.#ended;
  }

  /**
   * Decodes the next message of the stream.
   *
   * @param bytes One message: zero or more dictionary batches then one record batch (the
   * first message starts with the schema), or the end-of-stream marker.
   * @returns The record batch, or `null` for the end of the stream.
   */
  decode(bytes: Uint8Array): RecordBatch | null {
    if (this.#failure !== undefined) {
      throw asCodecError(
        "decode",
        new TypeError("the decoder failed earlier", {
          cause: this.#failure,
        }),
      );
    }
    try {
      if (this.#ended) throw new TypeError("message after the end of the stream");
      return this.#decode(this.#copy ? bytes.slice() : bytes);
    } catch (cause) {
      this.#failure = cause;
      throw asCodecError("decode", cause);
    }
  }

  #decode(bytes: Uint8Array): RecordBatch | null {
    let pos = 0;
    for (;;) {
      const step = this.#reader.next(bytes, pos);
      pos = step.end;
      if (step.kind === "eos" || step.kind === "batch") {
        if (pos !== bytes.length) {
          throw new RangeError(
            `${bytes.length - pos} bytes follow the ${
              step.kind === "eos" ? "end-of-stream marker" : "record batch"
            } in one message`,
          );
        }
        if (step.kind === "batch") return step.batch!;
        this.#ended = true;
        return null;
      }
    }
  }
}

/**
 * The values one column can be built from: a typed array (kept as is, no copy), a plain array
 * (type inferred, see {@linkcode tableFromColumns}) or a ready apache-arrow `Vector`.
 */
export type ColumnValues =
  | Int8Array
  | Int16Array
  | Int32Array
  | Uint8Array
  | Uint16Array
  | Uint32Array
  | Float32Array
  | Float64Array
  | BigInt64Array
  | BigUint64Array
  | readonly unknown[]
  | ArrowVector;

/** An apache-arrow `Schema` (the type of `Table.schema`). */
export type ArrowSchema = Table["schema"];
/** An apache-arrow `DataType` (the type of a schema field's `type`). */
export type ArrowDataType = ArrowSchema["fields"][number]["type"];
/** An apache-arrow `Vector` (a table column). */
export type ArrowVector = NonNullable<ReturnType<Table["getChildAt"]>>;

/** Options of {@linkcode tableFromColumns} and {@linkcode tableFromRows}. */
export interface TableFromColumnsOptions {
  /**
   * Explicit types for some columns (for example `new TimestampMicrosecond()` or
   * `new Int32()` for plain number arrays), overriding inference.
   *
   * @default {{}}
   */
  types?: Readonly<Record<string, ArrowDataType>>;
}

/**
 * Builds a table from named columns, thin over apache-arrow's `vectorFromArray`. Typed arrays
 * keep their type and memory. Plain arrays are inferred from all their values: numbers →
 * Float64, bigints → Int64, strings → dictionary-encoded Utf8 (Int32 indices), booleans →
 * Bool, `Date`s → TimestampMillisecond, arrays → List, objects → Struct; `null` and
 * `undefined` are nulls. Mixed kinds, or lists mixing empty and non-empty arrays, cannot be
 * inferred: pass a type in `options.types`.
 *
 * @param columns Column name to values; every column needs the same length.
 * @param options Explicit column types.
 * @returns A table with one record batch.
 * @throws {RangeError} When the columns differ in length.
 * @throws {TypeError} When a column's type cannot be inferred.
 *
 * @example
 * ```ts
 * import { tableFromColumns } from "@conduit/ipc/codecs/arrow";
 * import { Int32, TimestampMillisecond } from "apache-arrow";
 * import assert from "node:assert/strict";
 *
 * const table = tableFromColumns(
 *   { n: [1, 2], at: [0, 1_700_000_000_000], tag: ["x", "y"] },
 *   { types: { n: new Int32(), at: new TimestampMillisecond() } },
 * );
 * assert.equal(String(table.schema.fields[0].type), "Int32");
 * assert.equal(String(table.schema.fields[2].type), "Dictionary<Int32, Utf8>");
 * ```
 */
export function tableFromColumns(
  columns: Readonly<Record<string, ColumnValues>>,
  options: TableFromColumnsOptions = {},
): Table {
  const vectors: Record<string, Vector> = {};
  let first: [string, number] | undefined;
  for (const [name, values] of Object.entries(columns)) {
    const type = options.types?.[name];
    const vector = values instanceof Vector
      ? values
      : type === undefined
      ? inferVector(values)
      : vectorFromArray(values as readonly unknown[], type);
    first ??= [name, vector.length];
    if (vector.length !== first[1]) {
      throw new RangeError(
        `column "${name}" has ${vector.length} values but column "${first[0]}" has ${first[1]}`,
      );
    }
    vectors[name] = vector;
  }
  return new Table(vectors);
}

/**
 * Builds a table from row objects. Columns are the union of the rows' keys in first-seen
 * order; a row without a key has a null there. Each column's type is inferred from all its
 * values as in {@linkcode tableFromColumns} (numbers become Float64, strings dictionary-encoded
 * Utf8), unless given in `options.types`.
 *
 * @typeParam R The row type (any object; its own enumerable keys become columns).
 * @param rows The rows.
 * @param options Explicit column types.
 * @returns A table with one record batch.
 *
 * @example
 * ```ts
 * import { tableFromRows } from "@conduit/ipc/codecs/arrow";
 * import assert from "node:assert/strict";
 *
 * const table = tableFromRows([{ a: 1, b: "x" }, { a: 2 }]);
 * assert.deepEqual(table.getChild("b")?.toArray(), ["x", null]);
 * ```
 */
export function tableFromRows<R extends object>(
  rows: readonly R[],
  options: TableFromColumnsOptions = {},
): Table {
  const columns = new Map<string, unknown[]>();
  for (const [i, row] of rows.entries()) {
    for (const key of Object.keys(row)) {
      let column = columns.get(key);
      if (column === undefined) {
        column = new Array(rows.length).fill(null);
        columns.set(key, column);
      }
      column[i] = (row as Record<string, unknown>)[key] ?? null;
    }
  }
  return tableFromColumns(Object.fromEntries(columns), options);
}

function inferVector(values: Exclude<ColumnValues, Vector>): Vector {
  try {
    return vectorFromArray(values as readonly unknown[]);
  } catch (err) {
    // apache-arrow's inference reads keys of every entry when it sees objects, nulls
    // included; infer from the non-null entries instead, then build with nulls.
    if (!Array.isArray(values) || !values.some((v) => v == null)) throw err;
    const { type } = vectorFromArray(values.filter((v) => v != null));
    return vectorFromArray(values, type);
  }
}

/** Options with their defaults filled in and checked. */
interface Settings {
  maxDepth: number;
  maxUncompressedBytes: number;
  compressionType: CompressionType | undefined;
}

function resolve(options: ArrowCodecOptions & ArrowBatchEncoderOptions): Settings {
  const maxUncompressedBytes = options.maxUncompressedBytes ?? DEFAULT_ARROW_MAX_UNCOMPRESSED_BYTES;
  if (!Number.isSafeInteger(maxUncompressedBytes) || maxUncompressedBytes < 0) {
    throw new RangeError(
      `maxUncompressedBytes must be a non-negative safe integer, got ${maxUncompressedBytes}`,
    );
  }
  return {
    maxDepth: options.maxDepth ?? DEFAULT_ARROW_MAX_DEPTH,
    maxUncompressedBytes,
    compressionType: options.compression === undefined
      ? undefined
      : compressionType(options.compression),
  };
}

function newWriter(settings: Settings): CollectingWriter {
  return new CollectingWriter(settings.compressionType ?? null);
}

function encodeStream(
  schema: Schema,
  batches: readonly RecordBatch[],
  settings: Settings,
): Uint8Array {
  const { maxDepth } = settings;
  checkDepth(schema, maxDepth);
  const writer = newWriter(settings);
  writer.begin(schema);
  for (const batch of batches) writer.write(conform(batch, schema, maxDepth));
  writer.writeEos();
  return writer.take();
}

function decodeStream(
  bytes: Uint8Array,
  settings: Settings,
): { schema: Schema; batches: RecordBatch[] } {
  const reader = new IpcReader(settings.maxDepth, settings.maxUncompressedBytes);
  const batches: RecordBatch[] = [];
  let pos = 0;
  for (;;) {
    const step = reader.next(bytes, pos);
    pos = step.end;
    if (step.kind === "batch") batches.push(step.batch!);
    if (step.kind === "eos") break;
  }
  if (reader.schema === undefined) throw new TypeError("the stream has no schema message");
  if (pos !== bytes.length) {
    throw new RangeError(`${bytes.length - pos} bytes follow the end-of-stream marker`);
  }
  return { schema: reader.schema, batches };
}

// Batches built separately get fresh dictionary ids even when their columns match, and
// apache-arrow's writer would start a new stream for each. A batch whose schema differs from
// the stream's only in dictionary ids is re-labelled with the stream's schema: the writer
// takes dictionary ids from the schema, and the data itself carries none.
function conform(batch: RecordBatch, schema: Schema, maxDepth: number): RecordBatch {
  if (batch.schema === schema) return batch;
  const equal: boolean = util.compareSchemas(schema, batch.schema);
  if (equal) return batch;
  checkDepth(batch.schema, maxDepth);
  if (shapeOf(batch.schema.fields) !== shapeOf(schema.fields)) {
    throw new TypeError(
      `record batch schema ${describe(batch.schema)} differs from the stream's ${describe(schema)}`,
    );
  }
  return new RecordBatch(schema, batch.data, batch.metadata);
}

// A type's structure without dictionary ids: constructor parameters, then children.
function shapeOf(fields: readonly Field[]): string {
  return fields.map((field) => {
    const { type } = field;
    const parts: string[] = [field.name, String(field.nullable), String(type.typeId)];
    for (const [key, value] of Object.entries(type)) {
      if (key !== "id" && (value === null || typeof value !== "object")) {
        parts.push(`${key}=${value}`);
      }
    }
    if (DataType.isDictionary(type)) {
      parts.push(
        shapeOf([new Field("indices", type.indices)]),
        shapeOf([new Field("values", type.dictionary)]),
      );
    }
    parts.push(shapeOf(type.children ?? []));
    return `(${parts.join(" ")})`;
  }).join("");
}

function checkDepth(schema: Schema, maxDepth: number): void {
  const depth = fieldDepth(schema, maxDepth);
  if (depth > maxDepth) {
    throw new RangeError(`column nesting depth ${depth} exceeds maxDepth (${maxDepth})`);
  }
}

function asCodecError(operation: "encode" | "decode", cause: unknown): CodecError {
  return cause instanceof CodecError ? cause : new CodecError(NAME, operation, cause);
}

function expected(what: string, value: unknown): string {
  const got = value === null
    ? "null"
    : typeof value === "object"
    ? (value.constructor?.name ?? "object")
    : typeof value;
  const hint = got === what ? ` from another copy of apache-arrow (conduit uses 21.2.0)` : "";
  return `expected an apache-arrow ${what}, got ${got === what ? `a ${what}${hint}` : got}`;
}

function describe(schema: Schema): string {
  return `{ ${schema.fields.map((f) => `${f.name}: ${f.type}`).join(", ")} }`;
}
