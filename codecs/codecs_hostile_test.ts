// Hostile-peer tests of the Arrow and Protobuf codecs: bytes a peer can send that must decode
// to the right values or fail as a CodecError, never to wrong values or to a table that throws
// something else when read.

import assert from "node:assert/strict";
import {
  type DataType,
  Date_,
  Decimal,
  Dictionary,
  Duration,
  Field,
  FixedSizeBinary,
  FixedSizeList,
  Int32,
  Int64,
  Int8,
  Interval,
  List,
  makeData,
  makeVector,
  Map_,
  Message,
  Schema,
  Table,
  tableFromArrays,
  Time,
  Timestamp,
  Union,
  UnionMode,
  Utf8,
  Utf8View,
  vectorFromArray,
} from "apache-arrow";
import { CodecError } from "../errors.ts";
import { arrowCodec } from "./arrow.ts";
import { concat } from "../framing/_test_util.ts";
import { assertDecodeError } from "./_test_util.ts";

const codec = arrowCodec();

/** The messages of a stream: kind ("Schema", "Dictionary<id>", "RecordBatch", "EOS") and bytes. */
function messages(bytes: Uint8Array): Array<{ kind: string; bytes: Uint8Array }> {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Array<{ kind: string; bytes: Uint8Array }> = [];
  let pos = 0;
  while (pos < bytes.length) {
    const length = view.getInt32(pos + 4, true);
    if (length === 0) {
      out.push({ kind: "EOS", bytes: bytes.subarray(pos, pos + 8) });
      pos += 8;
      continue;
    }
    const message = Message.decode(bytes.subarray(pos + 8, pos + 8 + length));
    const end = pos + 8 + length + Number(message.bodyLength);
    const kind = message.isSchema()
      ? "Schema"
      : message.isDictionaryBatch()
      ? `Dictionary${message.header().id}`
      : "RecordBatch";
    out.push({ kind, bytes: bytes.subarray(pos, end) });
    pos = end;
  }
  return out;
}

/** One schema message framed for a stream. */
function schemaMessage(schema: Schema): Uint8Array {
  const metadata = Message.encode(Message.from(schema));
  const padded = (metadata.length + 7) & ~7;
  const out = new Uint8Array(8 + padded);
  const view = new DataView(out.buffer);
  view.setUint32(0, 0xffff_ffff, true);
  view.setInt32(4, padded, true);
  out.set(metadata, 8);
  return out;
}

/** `table` encoded, then its schema message replaced by one whose single column is `type`:
 * the record batch (the same buffers) is then read as that type. */
function withColumnType(table: Table, type: DataType): Uint8Array {
  const [schema, ...rest] = messages(codec.encode(table));
  assert.equal(schema.kind, "Schema");
  const name = table.schema.fields[0].name;
  return concat([
    schemaMessage(new Schema([new Field(name, type, true)])),
    ...rest.map((m) => m.bytes),
  ]);
}

/** Every value of every column, read as a reader of the table would. */
function readAll(table: Table): unknown[][] {
  return table.schema.fields.map((f) => [...table.getChild(f.name)!]);
}

// --- Arrow: nested dictionaries -------------------------------------------------------------

/** A column dictionary-encoded (id 1) whose values are lists of dictionary-encoded (id 2)
 * strings. */
function nestedDictionaryTable(): Table {
  const inner = new Dictionary(new Utf8(), new Int32(), 2);
  const list = new List(new Field("item", inner, true));
  const outer = new Dictionary(list, new Int32(), 1);
  const innerData = makeData({
    type: inner,
    length: 3,
    nullCount: 0,
    data: Int32Array.of(2, 1, 0),
    dictionary: vectorFromArray(["x", "y", "z"], new Utf8()),
  });
  const listData = makeData({
    type: list,
    length: 2,
    nullCount: 0,
    valueOffsets: Int32Array.of(0, 1, 3),
    child: innerData,
  });
  const outerData = makeData({
    type: outer,
    length: 3,
    nullCount: 0,
    data: Int32Array.of(1, 0, 1),
    dictionary: makeVector(listData),
  });
  return new Table({ a: makeVector(outerData) });
}

Deno.test("codecs hostile: arrow dictionary batch before the dictionary it nests is a CodecError", () => {
  const bytes = codec.encode(nestedDictionaryTable());
  const parts = messages(bytes);
  assert.deepStrictEqual(parts.map((m) => m.kind), [
    "Schema",
    "Dictionary2",
    "Dictionary1",
    "RecordBatch",
    "EOS",
  ]);
  const plain = (t: Table) => readAll(t)[0].map((row) => [...(row as Iterable<unknown>)]);
  assert.deepStrictEqual(plain(codec.decode(bytes)), [["y", "x"], ["z"], ["y", "x"]]);
  // The spec requires a nested dictionary before the one that uses it. Swapped, the outer
  // dictionary was loaded without its inner one and every string read back as null.
  const swapped = concat([parts[0], parts[2], parts[1], parts[3], parts[4]].map((m) => m.bytes));
  assertDecodeError(() => codec.decode(swapped), /dictionary 1 .*dictionary 2/);
});

// --- Arrow: type parameters -----------------------------------------------------------------

Deno.test("codecs hostile: arrow type parameters the format does not define are a CodecError", () => {
  const int64s = tableFromArrays({ x: BigInt64Array.of(1n, 2n ** 62n) });
  const pairs = new Table({
    x: vectorFromArray(
      [[1, 2], [3, 4]],
      new FixedSizeList(2, new Field("i", new Int32())),
    ),
  });
  const lists = new Table({
    x: vectorFromArray([[1, 2], [3]], new List(new Field("i", new Int32()))),
  });
  const union = new Union(UnionMode.Sparse, [0], [new Field("i", new Int32())]);
  const unions = new Table({
    x: makeVector(makeData({
      type: union,
      length: 2,
      nullCount: 0,
      typeIds: Int8Array.of(0, 0),
      children: [makeData({ type: new Int32(), length: 2, data: Int32Array.of(5, 6) })],
    })),
  });
  // What each did before: read back as undefined, as garbage, or threw a TypeError when read.
  const cases: Array<[string, Table, DataType]> = [
    ["date unit 2", int64s, new Date_(2 as never)], // read threw "not safe to convert"
    ["timestamp unit 7", int64s, new Timestamp(7 as never)], // read as undefined
    ["duration unit 7", int64s, new Duration(7 as never)], // read as undefined
    ["time unit 9", int64s, new Time(9 as never, 64 as never)], // read as undefined
    ["time64 in seconds", int64s, new Time(0, 64 as never)], // read as bigints
    ["interval unit 5", int64s, new Interval(5 as never)],
    ["decimal of bit width 0", int64s, new Decimal(0, 10, 0)], // read as 0
    ["decimal of bit width -64", int64s, new Decimal(0, 10, -64)], // read as garbage
    ["fixed-size binary of width -1", int64s, new FixedSizeBinary(-1)], // 15 bytes, then none
    ["fixed-size list of size -1", pairs, new FixedSizeList(-1, new Field("i", new Int32()))],
    ["map of Int32 entries", lists, new Map_(new Field("i", new Int32()) as never)], // read threw
    ["union mode 5", unions, new Union(5 as never, [0], [new Field("i", new Int32())])],
  ];
  for (const [name, table, type] of cases) {
    let decoded: Table;
    try {
      decoded = codec.decode(withColumnType(table, type));
    } catch (err) {
      assert.ok(err instanceof CodecError, `${name}: expected CodecError, got ${err}`);
      continue;
    }
    assert.fail(`${name}: decoded as a ${decoded.schema.fields[0].type} column`);
  }
  // The parameters the format does define still decode.
  const decimal64 = codec.decode(withColumnType(int64s, new Decimal(0, 18, 64)));
  assert.deepStrictEqual(readAll(decimal64)[0].map(String), ["1", String(2n ** 62n)]);
  const empty = codec.decode(withColumnType(int64s, new FixedSizeBinary(0)));
  assert.deepStrictEqual(readAll(empty)[0], [new Uint8Array(0), new Uint8Array(0)]);
  assert.equal(codec.decode(codec.encode(unions)).getChild("x")!.get(1), 6);
});

// --- Arrow: dictionary indices and views ----------------------------------------------------

Deno.test("codecs hostile: arrow dictionary index outside its dictionary is a CodecError", () => {
  const dictionary = vectorFromArray(["x", "y", "z"], new Utf8());
  const column = (indices: Int32Array | Int8Array, nullBitmap?: Uint8Array) => {
    const type = new Dictionary(
      new Utf8(),
      indices instanceof Int8Array ? new Int8() : new Int32(),
      0,
    );
    return new Table({
      a: makeVector(makeData({
        type,
        length: indices.length,
        nullCount: nullBitmap === undefined ? 0 : -1,
        nullBitmap,
        data: indices as Int32Array,
        dictionary,
      })),
    });
  };
  // Before: rows 1 and 2 read back as null and "" (not errors, not the peer's values).
  assertDecodeError(
    () => codec.decode(codec.encode(column(Int32Array.of(0, 7)))),
    /a: row 1 .*index 7.* 3 values/,
  );
  assertDecodeError(
    () => codec.decode(codec.encode(column(Int8Array.of(0, 1, -1)))),
    /a: row 2 .*index -1/,
  );
  // A null row's index is undefined by the format: any value is accepted there.
  const withNull = codec.decode(
    codec.encode(column(Int32Array.of(2, 99, 0), Uint8Array.of(0b101))),
  );
  assert.deepStrictEqual(readAll(withNull)[0], ["z", null, "x"]);
});

Deno.test("codecs hostile: arrow string view pointing outside its data buffer is a CodecError", () => {
  const strings = ["short", "a string longer than twelve bytes", "another long string here!!"];
  const bytes = codec.encode(new Table({ s: vectorFromArray(strings, new Utf8View()) }));
  assert.deepStrictEqual(readAll(codec.decode(bytes))[0], strings);
  // The view of row 1: its length (33), its 4-byte prefix, buffer index, offset.
  const needle = [33, 0, 0, 0, ...new TextEncoder().encode("a st")];
  const at = bytes.findIndex((_, i) => needle.every((b, j) => bytes[i + j] === b));
  assert.ok(at > 0);
  const patched = (field: number, value: number) => {
    const copy = bytes.slice();
    new DataView(copy.buffer).setInt32(at + field, value, true);
    return copy;
  };
  // Before: row 1 read back as "" (offset), as both strings run together (length), or threw
  // a plain Error when read (buffer index).
  assertDecodeError(() => codec.decode(patched(12, 1000)), /s: row 1 /);
  assertDecodeError(() => codec.decode(patched(0, 4000)), /s: row 1 /);
  assertDecodeError(() => codec.decode(patched(8, 5)), /s: row 1 /);
  assertDecodeError(() => codec.decode(patched(12, -1)), /s: row 1 /);
});

Deno.test("codecs hostile: arrow 64-bit dictionary indices are a CodecError naming them", () => {
  // pyarrow writes these (pa.dictionary(pa.int64(), pa.string())); apache-arrow decoded them,
  // then threw "Cannot mix BigInt and other types" at every read of the column.
  const strings = makeData({
    type: new Dictionary(new Utf8(), new Int32(), 0),
    length: 2,
    nullCount: 0,
    data: Int32Array.of(1, 0),
    dictionary: vectorFromArray(["x", "y"], new Utf8()),
  });
  const [, dictionary] = messages(codec.encode(new Table({ a: makeVector(strings) })));
  assert.equal(dictionary.kind, "Dictionary0");
  const [, batch, eos] = messages(codec.encode(tableFromArrays({ a: BigInt64Array.of(1n, 0n) })));
  const schema = new Schema([
    new Field("a", new Dictionary(new Utf8(), new Int64() as never, 0), true),
  ]);
  const bytes = concat([schemaMessage(schema), dictionary.bytes, batch.bytes, eos.bytes]);
  assertDecodeError(() => codec.decode(bytes), /"a" has dictionary indices of 64 bits/);
});

Deno.test("codecs hostile: a compressed buffer stating 2^32 + 8 bytes is over maxUncompressedBytes", async () => {
  const { BufferRegion } = await import("apache-arrow/ipc/metadata/message");
  const { decompressBody } = await import("./arrow_compression.ts");
  // One buffer: its 8-byte stated length, then 8 raw bytes. Rounded up to 8 with 32-bit
  // arithmetic, 2^32 + 8 wrapped to 8 and passed a 1 KiB limit.
  const body = new Uint8Array(16);
  new DataView(body.buffer).setBigInt64(0, 2n ** 32n + 8n, true);
  assert.throws(
    () => decompressBody(body, [new BufferRegion(0, 16)], 0, 1024),
    /decompresses to more than maxUncompressedBytes \(1024\)/,
  );
});
