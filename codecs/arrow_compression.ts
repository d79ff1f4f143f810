// Compressed Arrow IPC bodies (BodyCompression, method BUFFER): every buffer of a compressed
// record batch or dictionary batch is an 8-byte little-endian uncompressed length followed by
// an LZ4 frame or a Zstandard frame, or by the raw bytes when that length is -1. Reading
// decompresses each buffer into one new aligned body; writing lays the compressed buffers out
// for apache-arrow's writer. Only the Arrow entrypoint loads this file (and so lz4js and node:zlib).

import { CompressionType } from "apache-arrow";
import { BufferRegion } from "apache-arrow/ipc/metadata/message";
import * as lz4 from "lz4js";
import { zstdCompressSync, zstdDecompressSync } from "node:zlib";

/** The compressions conduit reads and writes, by their names in `ArrowCodecOptions`. */
export type ArrowCompression = "lz4" | "zstd";

/** The `CompressionType` of each name (LZ4_FRAME = 0, ZSTD = 1 in the Arrow schema). */
export const COMPRESSION_TYPES: Record<ArrowCompression, CompressionType> = {
  lz4: CompressionType.LZ4_FRAME,
  zstd: CompressionType.ZSTD,
};

const NO_COMPRESSION = -1;
const PREFIX = 8;

/** The name of a compression type id from a message header, for error messages. */
export function compressionName(type: number): string {
  return type === CompressionType.LZ4_FRAME
    ? "LZ4_FRAME"
    : type === CompressionType.ZSTD
    ? "ZSTD"
    : `${type}`;
}

/**
 * Decompresses every buffer of a compressed body into one new body, each buffer at an offset
 * that is a multiple of 8, and returns it with the regions of the buffers in it. The sum of
 * the uncompressed lengths is checked against `maxBytes` before anything is allocated, and
 * every buffer must decompress to exactly its stated length.
 */
export function decompressBody(
  body: Uint8Array,
  regions: readonly BufferRegion[],
  type: number,
  maxBytes: number,
): { body: Uint8Array; regions: BufferRegion[] } {
  const view = new DataView(body.buffer, body.byteOffset, body.byteLength);
  const lengths: number[] = [];
  let total = 0;
  for (const [i, { offset, length }] of regions.entries()) {
    if (length === 0) {
      lengths.push(0);
      continue;
    }
    if (length < PREFIX) {
      throw new RangeError(
        `compressed buffer ${i} has ${length} bytes, less than its 8-byte length`,
      );
    }
    const stated = Number(view.getBigInt64(offset, true));
    if (stated < NO_COMPRESSION) {
      throw new RangeError(`compressed buffer ${i} states an uncompressed length of ${stated}`);
    }
    const size = stated === NO_COMPRESSION ? length - PREFIX : stated;
    lengths.push(size);
    // Rounded up to 8 in floating point: 32-bit arithmetic would wrap a stated 2^32 + 8 to 8.
    total += Math.ceil(size / 8) * 8;
    if (total > maxBytes) {
      throw new RangeError(
        `compressed body decompresses to more than maxUncompressedBytes (${maxBytes})`,
      );
    }
  }
  const out = new Uint8Array(total);
  const placed: BufferRegion[] = [];
  let at = 0;
  for (const [i, { offset, length }] of regions.entries()) {
    const size = lengths[i];
    placed.push(new BufferRegion(at, size));
    if (length === 0) continue;
    const payload = body.subarray(offset + PREFIX, offset + length);
    const target = out.subarray(at, at + size);
    if (view.getBigInt64(offset, true) === BigInt(NO_COMPRESSION)) target.set(payload);
    else decompressInto(payload, target, type, i);
    at += Math.ceil(size / 8) * 8;
  }
  return { body: out, regions: placed };
}

function decompressInto(payload: Uint8Array, target: Uint8Array, type: number, i: number): void {
  let written: number;
  try {
    if (type === CompressionType.LZ4_FRAME) {
      written = lz4Frame(payload, target);
    } else {
      const bytes = zstdDecompressSync(payload, { maxOutputLength: Math.max(target.length, 1) });
      target.set(bytes.subarray(0, target.length));
      written = bytes.length;
    }
  } catch (cause) {
    throw new TypeError(`compressed buffer ${i} is not a valid ${compressionName(type)} frame`, {
      cause,
    });
  }
  if (written !== target.length) {
    throw new RangeError(
      `compressed buffer ${i} decompresses to ${written} bytes, not the ${target.length} it states`,
    );
  }
}

const LZ4_MAGIC = 0x184d2204;
/** The largest block of each LZ4 frame block-size code (4 to 7). */
const LZ4_BLOCK_MAX = [0, 0, 0, 0, 64 << 10, 256 << 10, 1 << 20, 4 << 20];

/**
 * Decompresses one LZ4 frame into `target`; returns how many bytes it held. The frame is
 * walked here and each block handed to lz4js, so that a block may not overrun the payload or
 * exceed the frame's block size and decompressing stops at the first block past `target`:
 * lz4js alone trusts stated block sizes (a few bytes claiming 2 GiB kept it busy for seconds)
 * and drops what does not fit. Checksums are not verified (lz4js does not either).
 */
function lz4Frame(payload: Uint8Array, target: Uint8Array): number {
  const view = new DataView(payload.buffer, payload.byteOffset, payload.byteLength);
  const bad = (why: string): never => {
    throw new TypeError(`LZ4 frame: ${why}`);
  };
  if (payload.length < 7 || view.getUint32(0, true) !== LZ4_MAGIC) bad("no LZ4 frame magic");
  const flags = payload[4];
  if (flags >> 6 !== 1) bad(`version ${flags >> 6}, not 1`);
  if (flags & 0x01) bad("a dictionary id, which Arrow does not use");
  const blockMax = LZ4_BLOCK_MAX[(payload[5] >> 4) & 7];
  if (!blockMax) bad(`block size code ${(payload[5] >> 4) & 7}`);
  let pos = 6 + (flags & 0x08 ? 8 : 0) + 1; // content size, header checksum
  let written = 0;
  for (;;) {
    if (pos + 4 > payload.length) bad("ends inside a block header");
    const word = view.getUint32(pos, true);
    pos += 4;
    if (word === 0) break;
    const size = word & 0x7fff_ffff;
    if (size > blockMax || pos + size > payload.length) {
      bad(`a block of ${size} bytes at byte ${pos - 4} overruns the frame or its block size`);
    }
    if (word & 0x8000_0000) {
      if (written + size > target.length) return written + size;
      target.set(payload.subarray(pos, pos + size), written);
      written += size;
    } else {
      // lz4js writes what fits into `target` and returns where its output ended.
      written = lz4.decompressBlock(payload, target, pos, size, written);
      if (!(written <= target.length)) return Number.isNaN(written) ? -1 : written;
    }
    pos += size + (flags & 0x10 ? 4 : 0); // block checksum
  }
  return written;
}

/** Checks a compression name from the options and gives its type. */
export function compressionType(name: ArrowCompression): CompressionType {
  const type = COMPRESSION_TYPES[name];
  if (typeof name !== "string" || !Object.hasOwn(COMPRESSION_TYPES, name)) {
    throw new TypeError(`compression must be "lz4" or "zstd", got ${String(name)}`);
  }
  return type;
}

/**
 * Compresses the buffers of one message body, laid out as apache-arrow's writer lays out a
 * compressed body: for each buffer an 8-byte length and the data, each pair starting at a
 * multiple of 8, an empty buffer taking no bytes. The length is the uncompressed length, or -1
 * for a buffer written raw because compressing did not shrink it. (apache-arrow 21's own
 * writer states the compressed length there, which pyarrow then refuses.)
 */
export function compressBuffers(
  buffers: ArrayBufferView[],
  type: CompressionType,
): { byteLength: number; bufferRegions: BufferRegion[]; buffers: ArrayBufferView[] } {
  const compress = type === CompressionType.LZ4_FRAME ? lz4Compress : zstdCompress;
  const out: ArrayBufferView[] = [];
  const bufferRegions: BufferRegion[] = [];
  let at = 0;
  for (const buffer of buffers) {
    const data = new Uint8Array(buffer.buffer, buffer.byteOffset, buffer.byteLength);
    if (data.length === 0) {
      out.push(data, data);
      bufferRegions.push(new BufferRegion(at, 0));
      continue;
    }
    const compressed = compress(data);
    const shrank = compressed.length < data.length;
    const prefix = new Uint8Array(PREFIX);
    new DataView(prefix.buffer).setBigInt64(0, BigInt(shrank ? data.length : NO_COMPRESSION), true);
    const payload = shrank ? compressed : data;
    out.push(prefix, payload);
    at = (at + 7) & ~7;
    bufferRegions.push(new BufferRegion(at, PREFIX + payload.length));
    at += PREFIX + payload.length;
  }
  return { byteLength: (at + 7) & ~7, bufferRegions, buffers: out };
}

function lz4Compress(data: Uint8Array): Uint8Array {
  return lz4.compress(data);
}

function zstdCompress(data: Uint8Array): Uint8Array {
  const bytes = zstdCompressSync(data);
  return new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}
