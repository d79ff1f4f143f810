/**
 * Framing: streams between bytes and whole frames (`Uint8Array` payloads). Three framings,
 * each a decoder `TransformStream` and an encoder stream pair:
 *
 * - Length-prefixed binary, the default: a 4-byte big-endian length, then the payload.
 *   {@linkcode FrameDecoderStream} and {@linkcode FrameEncoderStream}; the synchronous
 *   {@linkcode FrameDecoder} for parse loops (with {@linkcode FrameReader}, which reads large
 *   frames straight into their buffers) and the coalescing {@linkcode FrameWriter} for hot
 *   write paths.
 * - Newline-delimited (NDJSON, JSON Lines), for JSON peers and JSON-over-stdio:
 *   {@linkcode NdjsonDecoderStream} and {@linkcode NdjsonEncoderStream}.
 * - Content-Length (the Language Server Protocol's framing):
 *   {@linkcode ContentLengthDecoderStream} and {@linkcode ContentLengthEncoderStream}.
 *
 * Every decoder is correct for any chunking, returns views into the input when a frame lies
 * inside one chunk and copies a frame that spans chunks once, and enforces a size limit with
 * an exported default (`maxFrameBytes`, or `maxLineBytes` for lines) before buffering the
 * frame. Malformed input errors the stream with a `FramingError` subclass
 * (`FrameTooLargeError`, `TruncatedFrameError`, `FrameSyntaxError`), never anything else.
 * Every encoder coalesces the frames written in one turn into one chunk of at most
 * `maxBatchBytes` (64 KiB), flushed at the end of the microtask turn, and passes larger
 * payloads through without copying them.
 *
 * @example
 * ```ts
 * import { FrameDecoderStream, FrameEncoderStream } from "@conduit/ipc/framing";
 * import assert from "node:assert/strict";
 *
 * const payload = new TextEncoder().encode("hello");
 * const [frame] = await Array.fromAsync(
 *   ReadableStream.from([payload]).pipeThrough(new FrameEncoderStream()).pipeThrough(
 *     new FrameDecoderStream(),
 *   ),
 * );
 * assert.equal(new TextDecoder().decode(frame), "hello");
 * ```
 *
 * @module
 */

export * from "./frame_decoder.ts";
export * from "./frame_decoder_stream.ts";
export * from "./frame_encoder_stream.ts";
export * from "./frame_writer.ts";
export * from "./content_length_decoder_stream.ts";
export * from "./content_length_encoder_stream.ts";
export * from "./ndjson_decoder_stream.ts";
export * from "./ndjson_encoder_stream.ts";
// The error the FrameWriter reports a failed byte stream with.
export { ConduitError, TransportClosedError } from "../errors.ts";
