// Reading and writing the Arrow IPC stream format on top of apache-arrow's pieces.
//
// apache-arrow's own readers trust their input: a flipped byte in a message header can make
// them loop over billions of phantom field nodes, and a stream cut at a message boundary reads
// back as a shorter table without complaint. So every message header is checked here (bounds,
// vector lengths, nesting depth, a budget on tables visited) before apache-arrow decodes it,
// the end-of-stream marker is required, and the decoded buffers are checked against the
// lengths they claim. All of that is per message and per column, never per row.

import {
  type CompressionType,
  type Data,
  makeData,
  Message,
  MessageHeader,
  RecordBatch,
  RecordBatchStreamWriter,
  type Schema,
  Struct,
  Type,
  Vector,
} from "apache-arrow";
import type {
  DictionaryBatch as DictionaryBatchHeader,
  RecordBatch as RecordBatchHeader,
} from "apache-arrow/ipc/metadata/message";
import type { ArrayBufferViewInput } from "apache-arrow/util/buffer";
import { VectorLoader } from "apache-arrow/visitor/vectorloader";
import type { BufferRegion } from "apache-arrow/ipc/metadata/message";
import { compressBuffers, compressionName, decompressBody } from "./_arrow_compression.ts";

/** The end-of-stream marker: a continuation token followed by a zero metadata length. */
export const EOS_MARKER: Uint8Array = new Uint8Array([0xff, 0xff, 0xff, 0xff, 0, 0, 0, 0]);

const CONTINUATION = 0xffff_ffff;
const PREFIX_BYTES = 8;
const METADATA_V4 = 3;
const METADATA_V5 = 4;

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
    const verified = new _MessageVerifier(metadata, this.#maxDepth).verify();
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
// crashes later. Per-row invariants (monotonic offsets, dictionary indices in range, view
// buffer indices) are not checked: that would cost a pass over the data, and breaking them
// reads back as wrong values or apache-arrow's own errors, never as a hang.
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
        break;
      case Type.Utf8:
      case Type.Binary:
      case Type.LargeUtf8:
      case Type.LargeBinary:
        checkOffsets(offsets, end, values?.length ?? 0, fail);
        break;
      case Type.List:
      case Type.LargeList:
      case Type.Map:
        checkOffsets(offsets, end, children[0]?.length ?? 0, fail);
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
        break;
      case Type.Union:
        if ((data.typeIds?.length ?? 0) < end) fail("the type ids", data.typeIds?.length ?? 0, end);
        break;
    }
  }
  for (const child of children) checkData(child, where);
}

const LIST_LIKE: ReadonlySet<Type> = new Set([
  Type.List,
  Type.LargeList,
  Type.FixedSizeList,
  Type.Map,
]);
const VIEW_BYTES = 16;

function checkOffsets(
  offsets: ArrayLike<number | bigint> | undefined,
  end: number,
  available: number,
  fail: (what: string, have: number, need: number) => never,
): void {
  const count = offsets?.length ?? 0;
  if (count < end + 1) fail("the offsets", count, end + 1);
  const last = Number(offsets![end]);
  if (!(last >= 0 && last <= available)) fail("the data", available, last);
}

interface VerifiedMessage {
  type: MessageHeader;
  bodyLength: number;
  /** Record-batch field nodes the schema needs, or nodes in this (dictionary) batch. */
  nodes: number;
  dictionaryId: number;
  dictionaryNodes: Map<number, number>;
  /** The body's compression type (0 LZ4_FRAME, 1 ZSTD), or -1 when it has none. */
  compression: number;
}

const TYPE_TIMESTAMP = 10;
const TYPE_UNION = 14;
/** Arrow types apache-arrow cannot represent, by their id in the schema's Type union. */
const UNREPRESENTABLE: Record<number, string> = {
  22: "RunEndEncoded",
  25: "ListView",
  26: "LargeListView",
};
/** The highest Type union id this reader knows (LargeListView). */
const LAST_TYPE = 26;
const COMPRESSION_LZ4_FRAME = 0;
const COMPRESSION_ZSTD = 1;

// A bounds-checking walk over the flatbuffer of one message header. It reads exactly the
// vectors and tables apache-arrow's decoder will read, so once it passes, decoding does a
// bounded amount of work.
class _MessageVerifier {
  readonly #view: DataView;
  readonly #length: number;
  readonly #maxDepth: number;
  // An honest flatbuffer holds at most one table per 4 bytes; shared (DAG) references that
  // would make the walk explode exhaust this budget instead.
  #budget: number;
  #compression = -1;

  constructor(metadata: Uint8Array, maxDepth: number) {
    this.#view = new DataView(metadata.buffer, metadata.byteOffset, metadata.byteLength);
    this.#length = metadata.byteLength;
    this.#maxDepth = maxDepth;
    this.#budget = (metadata.byteLength >> 2) + 1;
  }

  verify(): VerifiedMessage {
    this.#need(0, 4, "root offset");
    const message = this.#table(this.#view.getUint32(0, true), "message");
    const version = this.#i16(message, 0);
    if (version !== METADATA_V4 && version !== METADATA_V5) {
      throw new TypeError(`metadata version V${version + 1} is not supported (V4 or V5 is)`);
    }
    const type = this.#u8(message, 1) as MessageHeader;
    const header = this.#ref(message, 2, "message header");
    if (header < 0) throw new TypeError("message has no header");
    const bodyLength = this.#i64(message, 3, "body length");
    this.#keyValues(message, 4);
    const result: VerifiedMessage = {
      type,
      bodyLength,
      nodes: 0,
      dictionaryId: 0,
      dictionaryNodes: new Map(),
      compression: -1,
    };
    switch (type) {
      case MessageHeader.Schema:
        if (bodyLength !== 0) throw new TypeError(`schema message has a ${bodyLength}-byte body`);
        result.nodes = this.#schema(this.#table(header, "schema"), result.dictionaryNodes);
        break;
      case MessageHeader.RecordBatch:
        result.nodes = this.#recordBatch(this.#table(header, "record batch"), bodyLength);
        break;
      case MessageHeader.DictionaryBatch: {
        const batch = this.#table(header, "dictionary batch");
        result.dictionaryId = this.#i64(batch, 0, "dictionary id");
        const data = this.#ref(batch, 1, "dictionary data");
        if (data < 0) throw new TypeError("dictionary batch has no data");
        result.nodes = this.#recordBatch(this.#table(data, "dictionary data"), bodyLength);
        break;
      }
      default:
        throw new TypeError(
          `message type ${MessageHeader[type] ?? type} is not supported in a stream`,
        );
    }
    result.compression = this.#compression;
    return result;
  }

  #schema(schema: number, dictionaryNodes: Map<number, number>): number {
    if (this.#i16(schema, 0) !== 0) throw new TypeError("big-endian streams are not supported");
    let nodes = 0;
    for (const field of this.#tables(schema, 1, "schema fields")) {
      nodes += this.#field(field, 0, dictionaryNodes);
    }
    this.#keyValues(schema, 2);
    this.#vector(schema, 3, 8, "schema features");
    return nodes;
  }

  // Returns the field nodes this field takes in a record batch: a dictionary-encoded field
  // takes one (its indices); its values' nodes travel in the dictionary batches.
  #field(field: number, depth: number, dictionaryNodes: Map<number, number>): number {
    this.#string(field, 0, "field name");
    const typeType = this.#u8(field, 2);
    const type = this.#ref(field, 3, "field type");
    if (typeType === 0 || type < 0) throw new TypeError("field has no type");
    if (typeType in UNREPRESENTABLE || typeType > LAST_TYPE) {
      const name = UNREPRESENTABLE[typeType] ?? `with type id ${typeType}`;
      throw new TypeError(
        `field "${this.#text(field, 0)}" is of type ${name}, which apache-arrow (and so this ` +
          `codec) cannot represent`,
      );
    }
    const typeTable = this.#table(type, "field type");
    if (typeType === TYPE_UNION) this.#vector(typeTable, 1, 4, "union type ids");
    if (typeType === TYPE_TIMESTAMP) this.#string(typeTable, 1, "timestamp time zone");
    const encoding = this.#ref(field, 4, "dictionary encoding");
    let dictionaryId = -1;
    if (encoding >= 0) {
      const table = this.#table(encoding, "dictionary encoding");
      dictionaryId = this.#i64(table, 0, "dictionary id");
      const indexType = this.#ref(table, 1, "dictionary index type");
      if (indexType >= 0) this.#table(indexType, "dictionary index type");
    }
    const children = this.#tables(field, 5, "field children");
    if (children.length > 0 && depth + 1 > this.#maxDepth) {
      throw new RangeError(`field nesting is deeper than maxDepth (${this.#maxDepth})`);
    }
    let nodes = 1;
    for (const child of children) nodes += this.#field(child, depth + 1, dictionaryNodes);
    this.#keyValues(field, 6);
    if (dictionaryId < 0) return nodes;
    const seen = dictionaryNodes.get(dictionaryId);
    if (seen !== undefined && seen !== nodes) {
      throw new TypeError(`dictionary id ${dictionaryId} is used by fields of different shapes`);
    }
    dictionaryNodes.set(dictionaryId, nodes);
    return 1;
  }

  #recordBatch(batch: number, bodyLength: number): number {
    this.#i64(batch, 0, "record batch length");
    const nodes = this.#vector(batch, 1, 16, "field nodes");
    for (let i = 0, at = nodes.start; i < nodes.count; i++, at += 16) {
      const length = this.#i64At(at, "field node length");
      const nullCount = this.#i64At(at + 8, "field node null count");
      if (nullCount > length) {
        throw new RangeError(`field node ${i} has ${nullCount} nulls in ${length} rows`);
      }
    }
    const buffers = this.#vector(batch, 2, 16, "buffers");
    for (let i = 0, at = buffers.start; i < buffers.count; i++, at += 16) {
      const offset = this.#i64At(at, "buffer offset");
      const length = this.#i64At(at + 8, "buffer length");
      if (offset + length > bodyLength) {
        throw new RangeError(
          `buffer ${i} spans bytes ${offset}..${offset + length} of a ${bodyLength}-byte body`,
        );
      }
    }
    const compression = this.#ref(batch, 3, "compression");
    if (compression >= 0) {
      const table = this.#table(compression, "body compression");
      const codec = this.#u8(table, 0);
      if (codec !== COMPRESSION_LZ4_FRAME && codec !== COMPRESSION_ZSTD) {
        throw new TypeError(`body compression ${compressionName(codec)} is not supported`);
      }
      if (this.#u8(table, 1) !== 0) {
        throw new TypeError(`body compression method ${this.#u8(table, 1)} is not BUFFER`);
      }
      this.#compression = codec;
    }
    const variadic = this.#vector(batch, 4, 8, "variadic buffer counts");
    for (let i = 0; i < variadic.count; i++) {
      this.#i64At(variadic.start + 8 * i, "variadic buffer count");
    }
    return nodes.count;
  }

  #keyValues(table: number, slot: number): void {
    for (const pair of this.#tables(table, slot, "custom metadata")) {
      this.#string(pair, 0, "metadata key");
      this.#string(pair, 1, "metadata value");
    }
  }

  #need(pos: number, size: number, what: string): void {
    if (pos < 0 || pos + size > this.#length) {
      throw new RangeError(
        `${what} at metadata byte ${pos} overruns the ${this.#length}-byte message header`,
      );
    }
  }

  #table(pos: number, what: string): number {
    if (--this.#budget < 0) {
      throw new RangeError(
        `message header references more tables than its ${this.#length} bytes can hold`,
      );
    }
    this.#need(pos, 4, what);
    const vtable = pos - this.#view.getInt32(pos, true);
    this.#need(vtable, 4, `${what} vtable`);
    const vtableSize = this.#view.getUint16(vtable, true);
    if (vtableSize < 4 || vtableSize % 2 !== 0) {
      throw new TypeError(`${what} vtable at metadata byte ${vtable} has size ${vtableSize}`);
    }
    this.#need(vtable, vtableSize, `${what} vtable`);
    this.#need(pos, this.#view.getUint16(vtable + 2, true), what);
    return pos;
  }

  // Position of a table's field, or -1 when absent.
  #slot(table: number, slot: number, size: number, what: string): number {
    const vtable = table - this.#view.getInt32(table, true);
    const entry = 4 + 2 * slot;
    if (entry >= this.#view.getUint16(vtable, true)) return -1;
    const offset = this.#view.getUint16(vtable + entry, true);
    if (offset === 0) return -1;
    this.#need(table + offset, size, what);
    return table + offset;
  }

  #u8(table: number, slot: number): number {
    const at = this.#slot(table, slot, 1, "field");
    return at < 0 ? 0 : this.#view.getUint8(at);
  }

  #i16(table: number, slot: number): number {
    const at = this.#slot(table, slot, 2, "field");
    return at < 0 ? 0 : this.#view.getInt16(at, true);
  }

  #i64(table: number, slot: number, what: string): number {
    const at = this.#slot(table, slot, 8, what);
    return at < 0 ? 0 : this.#i64At(at, what);
  }

  // A non-negative 64-bit integer that must also be a safe JS number.
  #i64At(at: number, what: string): number {
    this.#need(at, 8, what);
    const low = this.#view.getUint32(at, true);
    const high = this.#view.getInt32(at + 4, true);
    if (high < 0 || high > 0x1f_ffff) {
      throw new RangeError(`${what} at metadata byte ${at} is negative or above 2^53`);
    }
    return high * 0x1_0000_0000 + low;
  }

  #ref(table: number, slot: number, what: string): number {
    const at = this.#slot(table, slot, 4, what);
    if (at < 0) return -1;
    const target = at + this.#view.getUint32(at, true);
    this.#need(target, 4, what);
    return target;
  }

  #vector(
    table: number,
    slot: number,
    elementSize: number,
    what: string,
  ): { start: number; count: number } {
    const at = this.#ref(table, slot, what);
    if (at < 0) return { start: 0, count: 0 };
    const count = this.#view.getUint32(at, true);
    if (count > (this.#length - at - 4) / elementSize) {
      throw new RangeError(
        `${what} at metadata byte ${at} claims ${count} entries; the header has room for fewer`,
      );
    }
    return { start: at + 4, count };
  }

  #string(table: number, slot: number, what: string): void {
    this.#vector(table, slot, 1, what);
  }

  /** A string already checked by #string, decoded for an error message. */
  #text(table: number, slot: number): string {
    const { start, count } = this.#vector(table, slot, 1, "string");
    const bytes = new Uint8Array(this.#view.buffer, this.#view.byteOffset + start, count);
    return new TextDecoder().decode(bytes);
  }

  #tables(table: number, slot: number, what: string): number[] {
    const { start, count } = this.#vector(table, slot, 4, what);
    const out: number[] = [];
    for (let i = 0, at = start; i < count; i++, at += 4) {
      out.push(this.#table(at + this.#view.getUint32(at, true), what));
    }
    return out;
  }
}
