// Reading and writing the Arrow IPC stream format on top of apache-arrow's pieces.
//
// apache-arrow's own readers trust their input: a flipped byte in a message header can make
// them loop over billions of phantom field nodes, and a stream cut at a message boundary reads
// back as a shorter table without complaint. So every message header is checked first
// (_arrow_verify.ts: bounds, vector lengths, nesting depth, a budget on tables visited) before
// apache-arrow decodes it, the end-of-stream marker is required, and the decoded buffers are
// checked against the lengths they claim. All of that is per message and per column, never per row.

import {
  type CompressionType,
  type Data,
  type DataType,
  DateUnit,
  type Dictionary,
  makeData,
  Message,
  MessageHeader,
  RecordBatch,
  RecordBatchStreamWriter,
  type Schema,
  Struct,
  TimeUnit,
  Type,
  type Union,
  UnionMode,
  Vector,
} from "apache-arrow";
import type {
  BufferRegion,
  DictionaryBatch as DictionaryBatchHeader,
  RecordBatch as RecordBatchHeader,
} from "apache-arrow/ipc/metadata/message";
import type { ArrayBufferViewInput } from "apache-arrow/util/buffer";
import { VectorLoader } from "apache-arrow/visitor/vectorloader";
import { compressBuffers, decompressBody } from "./arrow_compression.ts";
import { MessageVerifier, type VerifiedMessage } from "./_arrow_verify.ts";

/** The end-of-stream marker: a continuation token followed by a zero metadata length. */
export const EOS_MARKER: Uint8Array = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

const CONTINUATION = 0xffff_ffff;
const PREFIX_BYTES = 8;

/** What one message did to the reader. */
export type IpcMessageKind = "schema" | "dictionary" | "batch" | "eos";

/** One message read by {@linkcode IpcReader.next}. */
export interface IpcStep {
  /** The message kind. */
  kind: IpcMessageKind;
  /** The record batch, when `kind` is `"batch"`. */
  batch: RecordBatch | undefined;
  /** Where the next message starts. */
  end: number;
}

/**
 * Reads the messages of an Arrow IPC stream one at a time and keeps the state that spans
 * them (schema, dictionaries). Decoded buffers are views over the input where alignment
 * allows; a body at an offset that is not a multiple of 8 is copied once.
 */
export class IpcReader {
  /** The stream's schema, once its schema message has been read. */
  schema: Schema | undefined;
  readonly #maxDepth: number;
  readonly #maxUncompressedBytes: number;
  readonly #dictionaries = new Map<number, Vector>();
  #batchNodes = 0;
  #dictionaryNodes = new Map<number, number>();

  /**
   * @param maxDepth The deepest field nesting accepted.
   * @param maxUncompressedBytes The most bytes one compressed message body may expand to.
   */
  constructor(maxDepth: number, maxUncompressedBytes: number) {
    this.#maxDepth = maxDepth;
    this.#maxUncompressedBytes = maxUncompressedBytes;
  }

  /** Reads the message that starts at `pos`. Throws on any malformed or misplaced message. */
  next(bytes: Uint8Array, pos: number): IpcStep {
    const remaining = bytes.length - pos;
    if (remaining < PREFIX_BYTES) {
      throw new RangeError(
        remaining === 0
          ? `stream ends at byte ${pos} without its end-of-stream marker`
          : `stream ends at byte ${bytes.length} inside a message prefix (${remaining} of 8 bytes)`,
      );
    }
    const view = new DataView(bytes.buffer, bytes.byteOffset + pos, PREFIX_BYTES);
    const marker = view.getUint32(0, true);
    if (marker !== CONTINUATION) {
      throw new TypeError(
        `expected the continuation marker 0xffffffff at byte ${pos}, found 0x${
          marker.toString(16).padStart(8, "0")
        } (not an Arrow IPC stream, or a pre-0.15 one)`,
      );
    }
    const metadataLength = view.getInt32(4, true);
    if (metadataLength === 0) return { kind: "eos", batch: undefined, end: pos + PREFIX_BYTES };
    const metaStart = pos + PREFIX_BYTES;
    if (metadataLength < 0 || metadataLength > bytes.length - metaStart) {
      throw new RangeError(
        `message at byte ${pos} announces ${metadataLength} metadata bytes but ${
          bytes.length - metaStart
        } remain`,
      );
    }
    const metadata = bytes.subarray(metaStart, metaStart + metadataLength);
    const verified = this.#verify(metadata, pos);
    const bodyStart = metaStart + metadataLength;
    if (verified.bodyLength > bytes.length - bodyStart) {
      throw new RangeError(
        `message at byte ${pos} announces a ${verified.bodyLength}-byte body but ${
          bytes.length - bodyStart
        } bytes remain`,
      );
    }
    const end = bodyStart + verified.bodyLength;
    let body = bytes.subarray(bodyStart, end);
    // Typed arrays need aligned offsets (8 for Float64/BigInt64).
    if (body.byteOffset % 8 !== 0) body = body.slice();
    const message = Message.decode(metadata);
    switch (verified.type) {
      case MessageHeader.Schema:
        this.schema = message.header() as Schema;
        this.#batchNodes = verified.nodes;
        this.#dictionaryNodes = verified.dictionaryNodes;
        return { kind: "schema", batch: undefined, end };
      case MessageHeader.DictionaryBatch: {
        const header = message.header() as DictionaryBatchHeader;
        const data = this.#uncompressed(body, header.data.buffers, verified.compression);
        this.#loadDictionary(header, data.body, data.regions);
        return { kind: "dictionary", batch: undefined, end };
      }
      default: {
        const header = message.header() as RecordBatchHeader;
        const data = this.#uncompressed(body, header.buffers, verified.compression);
        const batch = this.#loadBatch(header, data.body, data.regions, message.metadata);
        return { kind: "batch", batch, end };
      }
    }
  }

  #uncompressed(
    body: Uint8Array,
    regions: BufferRegion[],
    compression: number,
  ): { body: Uint8Array; regions: BufferRegion[] } {
    if (compression < 0) return { body, regions };
    return decompressBody(body, regions, compression, this.#maxUncompressedBytes);
  }

  #verify(metadata: Uint8Array, pos: number): VerifiedMessage {
    const verified = new MessageVerifier(metadata, this.#maxDepth).verify();
    const at = `message at byte ${pos}`;
    if (verified.type === MessageHeader.Schema) {
      if (this.schema !== undefined) {
        throw new TypeError(`${at} is a second schema message; a stream has exactly one`);
      }
      return verified;
    }
    if (this.schema === undefined) {
      throw new TypeError(
        `${at} is a ${
          MessageHeader[verified.type]
        } message before any schema: a stream starts with its schema`,
      );
    }
    if (verified.type === MessageHeader.RecordBatch) {
      if (verified.nodes !== this.#batchNodes) {
        throw new TypeError(
          `${at} has ${verified.nodes} field nodes; the schema needs ${this.#batchNodes}`,
        );
      }
      return verified;
    }
    const expected = this.#dictionaryNodes.get(verified.dictionaryId);
    if (expected === undefined) {
      throw new TypeError(`${at} is a dictionary batch for unknown id ${verified.dictionaryId}`);
    }
    if (verified.nodes !== expected) {
      throw new TypeError(
        `${at} has ${verified.nodes} field nodes; dictionary ${verified.dictionaryId} needs ${expected}`,
      );
    }
    return verified;
  }

  #loadBatch(
    header: RecordBatchHeader,
    body: Uint8Array,
    regions: BufferRegion[],
    metadata: Map<string, string>,
  ): RecordBatch {
    const schema = this.schema!;
    if (header.length > 0) {
      for (const id of schema.dictionaries.keys()) {
        // apache-arrow would silently substitute an empty dictionary.
        if (!this.#dictionaries.has(id)) {
          throw new TypeError(`a record batch arrived before its dictionary ${id}`);
        }
      }
    }
    const children = new VectorLoader(
      body,
      header.nodes,
      regions,
      this.#dictionaries,
      schema.metadataVersion,
      header.variadicBufferCounts,
    ).visitMany(schema.fields);
    for (const [i, child] of children.entries()) {
      // The spec requires equal lengths; a longer column would be rows no batch owns.
      if (child.length !== header.length) {
        throw new RangeError(
          `column "${
            schema.fields[i].name
          }" has ${child.length} rows but its record batch has ${header.length}`,
        );
      }
      checkData(child, schema.fields[i].name);
    }
    const data = makeData({ type: new Struct(schema.fields), length: header.length, children });
    return new RecordBatch(schema, data, metadata);
  }

  #loadDictionary(
    header: DictionaryBatchHeader,
    body: Uint8Array,
    regions: BufferRegion[],
  ): void {
    const schema = this.schema!;
    const type = schema.dictionaries.get(header.id)!;
    if (header.data.length > 0) {
      // A dictionary whose values are themselves dictionary-encoded comes after the dictionary
      // it uses; apache-arrow would load it without that one and read its values as nulls.
      for (const id of nestedDictionaryIds(type)) {
        if (!this.#dictionaries.has(id)) {
          throw new TypeError(
            `dictionary ${header.id} arrived before dictionary ${id}, which it uses`,
          );
        }
      }
    }
    const [data] = new VectorLoader(
      body,
      header.data.nodes,
      regions,
      this.#dictionaries,
      schema.metadataVersion,
      header.data.variadicBufferCounts,
    ).visitMany([type]);
    checkData(data, `dictionary ${header.id}`);
    const previous = this.#dictionaries.get(header.id);
    const vector = header.isDelta && previous
      ? previous.concat(new Vector([data]))
      : new Vector([data]);
    this.#dictionaries.set(header.id, vector.memoize());
  }
}

/** The ids of the dictionaries a type's values use, not counting those inside them. */
function nestedDictionaryIds(type: DataType): number[] {
  const ids: number[] = [];
  const stack: DataType[] = [type];
  while (stack.length > 0) {
    const current = stack.pop()!;
    for (const child of current.children ?? []) {
      if (child.type.typeId === Type.Dictionary) ids.push((child.type as Dictionary).id);
      else stack.push(child.type);
    }
  }
  return ids;
}

/** A stream writer that hands back the bytes of each write instead of queueing them. */
export class CollectingWriter extends RecordBatchStreamWriter {
  #chunks: Uint8Array[] = [];
  #size = 0;
  readonly #compression: CompressionType | null;

  /** @param compression How bodies are compressed, or null for not at all. */
  constructor(compression: CompressionType | null) {
    super({ autoDestroy: false, compressionType: compression });
    this.#compression = compression;
  }

  /** Starts the stream: queues the schema message. */
  begin(schema: Schema): void {
    this.reset(undefined, schema);
  }

  /** Queues the end-of-stream marker. */
  writeEos(): void {
    this._write(EOS_MARKER);
  }

  /** Returns everything written since the last call as one new array. */
  take(): Uint8Array {
    const out = new Uint8Array(this.#size);
    let at = 0;
    for (const chunk of this.#chunks) {
      out.set(chunk, at);
      at += chunk.byteLength;
    }
    this.#chunks = [];
    this.#size = 0;
    return out;
  }

  protected override _compressBodyBuffers(
    buffers: ArrayBufferView[],
  ): ReturnType<typeof compressBuffers> {
    return compressBuffers(buffers, this.#compression!);
  }

  protected override _write(chunk: ArrayBufferViewInput): this {
    if (!this._started) return this;
    if (!ArrayBuffer.isView(chunk)) throw new TypeError("apache-arrow wrote a non-buffer chunk");
    if (chunk.byteLength > 0) {
      this.#chunks.push(new Uint8Array(chunk.buffer, chunk.byteOffset, chunk.byteLength));
      this.#size += chunk.byteLength;
    }
    return this;
  }
}

/**
 * Returns the nesting depth of the deepest field (top-level columns are depth 0), stopping
 * as soon as it passes `limit` so that absurdly deep types cost no more than `limit` levels.
 */
export function fieldDepth(schema: Schema, limit: number): number {
  let deepest = 0;
  const stack: Array<[readonly { type: { children?: readonly unknown[] } }[], number]> = [[
    schema.fields,
    0,
  ]];
  while (stack.length > 0) {
    const [fields, depth] = stack.pop()!;
    if (depth > deepest) deepest = depth;
    if (depth > limit) return depth;
    for (const field of fields) {
      const children = field.type.children as typeof fields | undefined;
      if (children && children.length > 0) stack.push([children, depth + 1]);
    }
  }
  return deepest;
}

// Checks that each buffer is long enough for the rows it claims and that nested types have
// their child columns, so a corrupt header becomes an error here instead of short reads or
// crashes later. Offsets are checked row by row (one pass over them, not over the data): each
// decides where a row reads, and one out of order reads outside its buffer; so are a union's
// rows (the child each names, and the entry a dense one reads there), a dictionary column's
// indices (each names an entry of its dictionary) and a view column's views (each names bytes
// its data buffer holds): apache-arrow reads a broken one as null, "", clamped bytes or its
// own error. Null rows are skipped there, as the format leaves their contents undefined.
function checkData(data: Data, where: string): void {
  const { length, offset, stride, children, type } = data;
  const end = offset + length;
  const wanted = LIST_LIKE.has(type.typeId)
    ? 1
    : type.typeId === Type.Struct || type.typeId === Type.Union
    ? type.children.length
    : 0;
  const declared = type.typeId === Type.Dictionary ? 0 : type.children?.length ?? 0;
  if (declared !== wanted || children.length !== wanted) {
    throw new TypeError(
      `${where}: a ${type} column needs ${wanted} child column(s), found ${children.length}`,
    );
  }
  const fail = (what: string, have: number, need: number): never => {
    throw new RangeError(
      `${where}: ${what} holds ${have} entries but ${length} rows from offset ${offset} need ${need}`,
    );
  };
  if (length > 0) {
    const bitmap = data.nullBitmap;
    if (bitmap && bitmap.length > 0 && bitmap.length * 8 < end) {
      fail("the validity bitmap (bits)", bitmap.length * 8, end);
    }
    const values = data.values as ArrayLike<unknown> | undefined;
    const offsets = data.valueOffsets as ArrayLike<number | bigint> | undefined;
    switch (type.typeId) {
      case Type.Bool:
        if ((values?.length ?? 0) * 8 < end) {
          fail("the values (bits)", (values?.length ?? 0) * 8, end);
        }
        break;
      case Type.Int:
      case Type.Float:
      case Type.Date:
      case Type.Time:
      case Type.Timestamp:
      case Type.Decimal:
      case Type.Interval:
      case Type.Duration:
      case Type.FixedSizeBinary:
      case Type.Dictionary:
        if ((values?.length ?? 0) < end * stride) {
          fail("the values", values?.length ?? 0, end * stride);
        }
        checkValues(data, where);
        if (type.typeId === Type.Dictionary) checkIndices(data as Data<Dictionary>, where);
        break;
      case Type.Utf8:
      case Type.Binary:
      case Type.LargeUtf8:
      case Type.LargeBinary:
        checkOffsets(where, offsets, offset, end, values?.length ?? 0, fail);
        break;
      case Type.List:
      case Type.LargeList:
      case Type.Map:
        checkOffsets(where, offsets, offset, end, children[0]?.length ?? 0, fail);
        break;
      case Type.FixedSizeList: {
        const size = (type as unknown as { listSize: number }).listSize;
        if ((children[0]?.length ?? 0) < end * size) {
          fail("the child", children[0]?.length ?? 0, end * size);
        }
        break;
      }
      case Type.Struct:
        for (const child of children) if (child.length < end) fail("a child", child.length, end);
        break;
      case Type.BinaryView:
      case Type.Utf8View:
        if ((values?.length ?? 0) < end * VIEW_BYTES) {
          fail("the views (bytes)", values?.length ?? 0, end * VIEW_BYTES);
        }
        checkViews(data, where);
        break;
      case Type.Union:
        if ((data.typeIds?.length ?? 0) < end) fail("the type ids", data.typeIds?.length ?? 0, end);
        checkUnionRows(data as Data<Union>, where);
        break;
    }
  }
  for (const child of children) checkData(child, where);
}

/** Checks that apache-arrow can read each non-null value of a 64-bit date or time column. */
function checkValues(data: Data, where: string): void {
  const limit = readableLimit(data.type);
  if (limit !== undefined) checkReadable(data, limit, where);
}

/**
 * The largest magnitude of a 64-bit value of `type` that apache-arrow can read, or
 * `undefined` when it reads any: it converts a Date in milliseconds and a Timestamp in
 * seconds or milliseconds to a number, and a Timestamp in microseconds after dividing by
 * 1000, throwing a TypeError for a number beyond `Number.MAX_SAFE_INTEGER`.
 */
function readableLimit(type: Data["type"]): bigint | undefined {
  const unit = (type as unknown as { unit: number }).unit;
  const safe = BigInt(Number.MAX_SAFE_INTEGER);
  if (type.typeId === Type.Date) return unit === DateUnit.MILLISECOND ? safe : undefined;
  if (type.typeId !== Type.Timestamp) return undefined;
  if (unit === TimeUnit.SECOND || unit === TimeUnit.MILLISECOND) return safe;
  return unit === TimeUnit.MICROSECOND ? safe * 1000n + 999n : undefined;
}

/** High 32-bit words in (-2^21, 2^21): the value is within ±2^53, so within every limit. */
const SMALL_HIGH_WORD = 1 << 21;

// A value apache-arrow could not read (a date hundreds of thousands of years away, or a header
// whose type or unit was changed) is refused here, naming its row, rather than thrown later at
// a reader. One pass over the high 32-bit words; only a large value is compared exactly.
function checkReadable(data: Data, limit: bigint, where: string): void {
  const values = data.values as BigInt64Array;
  const words = new Int32Array(values.buffer, values.byteOffset, values.length * 2);
  const bitmap = data.nullBitmap;
  const hasNulls = bitmap !== undefined && bitmap.length > 0;
  for (let row = data.offset, end = data.offset + data.length; row < end; row++) {
    const high = words[2 * row + 1];
    if (high > -SMALL_HIGH_WORD && high < SMALL_HIGH_WORD) continue;
    if (hasNulls && (bitmap[row >> 3] & (1 << (row & 7))) === 0) continue;
    const value = values[row];
    if (value <= limit && value >= -limit) continue;
    throw new RangeError(
      `${where}: row ${row - data.offset} of a ${data.type} column holds ${value}, ` +
        "which apache-arrow cannot read as a JavaScript number",
    );
  }
}

const LIST_LIKE: ReadonlySet<Type> = new Set([
  Type.List,
  Type.LargeList,
  Type.FixedSizeList,
  Type.Map,
]);
const VIEW_BYTES = 16;
const VIEW_INLINE_BYTES = 12;

/** Whether `row` is null in a validity bitmap (an absent or empty bitmap has no nulls). */
function isNull(bitmap: Uint8Array | undefined, row: number): boolean {
  return bitmap !== undefined && bitmap.length > 0 && (bitmap[row >> 3] & (1 << (row & 7))) === 0;
}

/** Checks that each non-null row's index names an entry of the dictionary. */
function checkIndices(data: Data<Dictionary>, where: string): void {
  // 8, 16 or 32-bit integers: the verifier refuses 64-bit indices.
  const indices = data.values as Int32Array;
  const size = data.dictionary?.length ?? 0;
  const end = data.offset + data.length;
  for (let row = data.offset; row < end; row++) {
    const index = indices[row];
    if (index >= 0 && index < size) continue;
    if (isNull(data.nullBitmap, row)) continue;
    throw new RangeError(
      `${where}: row ${row - data.offset} holds dictionary index ${index}, outside the ` +
        `dictionary's ${size} values`,
    );
  }
}

/**
 * Checks that each non-null row of a view column (BinaryView, Utf8View) has a length of at
 * least 0 and, past the 12 bytes held inline, names a data buffer that holds its bytes.
 */
function checkViews(data: Data, where: string): void {
  const views = data.values as Uint8Array;
  const view = new DataView(views.buffer, views.byteOffset, views.byteLength);
  const buffers = (data as unknown as { variadicBuffers?: readonly Uint8Array[] })
    .variadicBuffers ?? [];
  const bitmap = data.nullBitmap;
  for (let row = data.offset, end = data.offset + data.length; row < end; row++) {
    const at = row * VIEW_BYTES;
    const size = view.getInt32(at, true);
    if (size >= 0 && size <= VIEW_INLINE_BYTES) continue;
    if (size > 0) {
      const buffer = buffers[view.getInt32(at + 8, true)];
      const start = view.getInt32(at + 12, true);
      if (buffer !== undefined && start >= 0 && start <= buffer.length - size) continue;
    }
    if (isNull(bitmap, row)) continue;
    throw new RangeError(
      `${where}: row ${row - data.offset} is a view of ${size} bytes at offset ${
        view.getInt32(at + 12, true)
      } of data buffer ${view.getInt32(at + 8, true)}, of ${buffers.length}, which do not hold it`,
    );
  }
}

/** Checks that each row of a union names one of its children and, dense, an entry there. */
function checkUnionRows(data: Data<Union>, where: string): void {
  const { typeIds, valueOffsets, children, offset, length } = data;
  const toChild = data.type.typeIdToChildIndex;
  const dense = data.type.mode === UnionMode.Dense;
  for (let row = offset; row < offset + length; row++) {
    const child = toChild[typeIds[row]];
    if (child === undefined || children[child] === undefined) {
      throw new RangeError(
        `${where}: row ${row} has type id ${typeIds[row]}, which names no child`,
      );
    }
    const entry = dense ? valueOffsets[row] : row;
    if (!(entry >= 0 && entry < children[child].length)) {
      throw new RangeError(
        `${where}: row ${row} reads entry ${entry} of child ${child}, which has ${
          children[child].length
        }`,
      );
    }
  }
}

/**
 * Checks a variable-width column's offsets for rows `start` to `end`: enough of them, each at
 * least the one before it and at most `available` (the values or child entries there are).
 */
function checkOffsets(
  where: string,
  offsets: ArrayLike<number | bigint> | undefined,
  start: number,
  end: number,
  available: number,
  fail: (what: string, have: number, need: number) => never,
): void {
  const count = offsets?.length ?? 0;
  if (count < end + 1) fail("the offsets", count, end + 1);
  // Every row's offsets, not only the last: a row reads from its offset to the next, so one
  // offset past the data or below the one before it reads outside the buffer.
  let previous = 0;
  for (let i = start; i <= end; i++) {
    const at = Number(offsets![i]);
    if (!(at >= previous && at <= available)) {
      throw new RangeError(
        `${where}: offset ${i} is ${at}, outside ${previous} to ${available} (the offset before ` +
          `it to the data's end)`,
      );
    }
    previous = at;
  }
}
