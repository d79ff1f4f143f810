/**
 * Framing: `TransformStream`s between bytes and whole frames.
 *
 * - Length-prefixed binary (the default): {@linkcode FrameEncoderStream},
 *   {@linkcode FrameDecoderStream}, the synchronous {@linkcode FrameDecoder} and the
 *   coalescing {@linkcode FrameWriter} for hot paths.
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
