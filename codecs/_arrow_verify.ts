// Verifying an Arrow IPC message header (a flatbuffer) before apache-arrow reads it, so that a
// corrupt or hostile header is an error here instead of a loop over phantom field nodes.

import { MessageHeader } from "apache-arrow";
import { compressionName } from "./arrow_compression.ts";

const METADATA_V4 = 3;
const METADATA_V5 = 4;

/** What the verifier learned of one message. */
export interface VerifiedMessage {
  type: MessageHeader;
  bodyLength: number;
  /** Record-batch field nodes the schema needs, or nodes in this (dictionary) batch. */
  nodes: number;
  dictionaryId: number;
  dictionaryNodes: Map<number, number>;
  /** The body's compression type (0 LZ4_FRAME, 1 ZSTD), or -1 when it has none. */
  compression: number;
}

// Ids in the schema's Type union.
const TYPE_DECIMAL = 7;
const TYPE_DATE = 8;
const TYPE_TIME = 9;
const TYPE_TIMESTAMP = 10;
const TYPE_INTERVAL = 11;
const TYPE_STRUCT = 13;
const TYPE_UNION = 14;
const TYPE_FIXED_SIZE_BINARY = 15;
const TYPE_FIXED_SIZE_LIST = 16;
const TYPE_MAP = 17;
const TYPE_DURATION = 18;
/** List, FixedSizeList, Map and LargeList: exactly one child. */
const ONE_CHILD: ReadonlySet<number> = new Set([12, TYPE_FIXED_SIZE_LIST, TYPE_MAP, 21]);
const DECIMAL_WIDTHS: ReadonlySet<number> = new Set([32, 64, 128, 256]);
const TYPE_NAMES: readonly string[] = [
  "NONE",
  "Null",
  "Int",
  "FloatingPoint",
  "Binary",
  "Utf8",
  "Bool",
  "Decimal",
  "Date",
  "Time",
  "Timestamp",
  "Interval",
  "List",
  "Struct",
  "Union",
  "FixedSizeBinary",
  "FixedSizeList",
  "Map",
  "Duration",
  "LargeBinary",
  "LargeUtf8",
  "LargeList",
  "RunEndEncoded",
  "BinaryView",
  "Utf8View",
];
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
export class MessageVerifier {
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
      if (indexType >= 0) {
        // apache-arrow decodes 64-bit indices, then throws a TypeError at every read of them.
        const bitWidth = this.#i32(this.#table(indexType, "dictionary index type"), 0, 0);
        if (bitWidth !== 8 && bitWidth !== 16 && bitWidth !== 32) {
          throw new TypeError(
            `field "${this.#text(field, 0)}" has dictionary indices of ${bitWidth} bits, which ` +
              "apache-arrow (and so this codec) cannot read (8, 16 or 32 bits it can)",
          );
        }
      }
    }
    const children = this.#tables(field, 5, "field children");
    this.#typeParameters(field, typeType, typeTable, children);
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

  // The parameters of a field's type and its number of children, as the format defines them:
  // apache-arrow reads an undefined unit as values of `undefined` (or as milliseconds), a
  // negative width as garbage, and takes only the children its type uses, while the nodes
  // counted here include them all.
  #typeParameters(field: number, typeType: number, type: number, children: number[]): void {
    const bad = (what: string): never => {
      throw new TypeError(
        `field "${this.#text(field, 0)}" has a ${TYPE_NAMES[typeType] ?? typeType} type ${what}`,
      );
    };
    const timeUnit = (unit: number) => {
      if (!(unit >= 0 && unit <= 3)) bad(`of unit ${unit}`);
    };
    switch (typeType) {
      case TYPE_DECIMAL: {
        const bitWidth = this.#i32(type, 2, 128);
        if (!DECIMAL_WIDTHS.has(bitWidth)) bad(`of bit width ${bitWidth}`);
        break;
      }
      case TYPE_DATE: {
        const unit = this.#i16(type, 0, 1);
        if (unit !== 0 && unit !== 1) bad(`of unit ${unit}`);
        break;
      }
      case TYPE_TIME: {
        const unit = this.#i16(type, 0, 1);
        timeUnit(unit);
        const bitWidth = this.#i32(type, 1, 32);
        if (bitWidth !== (unit <= 1 ? 32 : 64)) bad(`of unit ${unit} and bit width ${bitWidth}`);
        break;
      }
      case TYPE_TIMESTAMP:
        timeUnit(this.#i16(type, 0, 0));
        break;
      case TYPE_DURATION:
        timeUnit(this.#i16(type, 0, 1));
        break;
      case TYPE_INTERVAL: {
        const unit = this.#i16(type, 0, 0);
        if (!(unit >= 0 && unit <= 2)) bad(`of unit ${unit}`);
        break;
      }
      case TYPE_UNION: {
        const mode = this.#i16(type, 0, 0);
        if (mode !== 0 && mode !== 1) bad(`of mode ${mode}`);
        break;
      }
      case TYPE_FIXED_SIZE_BINARY:
      case TYPE_FIXED_SIZE_LIST: {
        const size = this.#i32(type, 0, 0);
        if (size < 0) bad(`of size ${size}`);
        break;
      }
    }
    const wanted = ONE_CHILD.has(typeType)
      ? 1
      : typeType === TYPE_STRUCT || typeType === TYPE_UNION
      ? children.length
      : 0;
    if (children.length !== wanted) bad(`with ${children.length} children, not ${wanted}`);
    if (typeType === TYPE_MAP) {
      const entries = children[0];
      if (this.#u8(entries, 2) !== TYPE_STRUCT || this.#vector(entries, 5, 4, "").count !== 2) {
        bad("whose entries are not a struct of a key and a value");
      }
    }
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

  #i16(table: number, slot: number, absent = 0): number {
    const at = this.#slot(table, slot, 2, "field");
    return at < 0 ? absent : this.#view.getInt16(at, true);
  }

  #i32(table: number, slot: number, absent: number): number {
    const at = this.#slot(table, slot, 4, "field");
    return at < 0 ? absent : this.#view.getInt32(at, true);
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
