/**
 * conduit: streaming inter-process communication for Deno. Typed channels over stdio, Unix
 * sockets, TCP and in-memory transports, with pluggable codecs.
 *
 * This entrypoint re-exports the core: errors, framing, the transport contract and the
 * in-memory pair, and the codec contract. Transports and codecs that pull in more live under
 * their own subpaths (`@conduit/ipc/transports/unix`, `@conduit/ipc/codecs/msgpack`, …).
 *
 * @example
 * ```ts
 * import { FrameDecoderStream, FrameEncoderStream, memoryPair } from "@conduit/ipc";
 * import assert from "node:assert/strict";
 *
 * const [a, b] = memoryPair();
 * const sent = ReadableStream.from([new Uint8Array([42])])
 *   .pipeThrough(new FrameEncoderStream())
 *   .pipeTo(a.writable);
 * const frames = b.readable.pipeThrough(new FrameDecoderStream());
 * for await (const frame of frames) {
 *   assert.deepEqual(frame, new Uint8Array([42]));
 *   break;
 * }
 * await sent;
 * await b.close();
 * ```
 *
 * @module
 */

export * from "./errors.ts";
export * from "./framing/mod.ts";
export * from "./transports/mod.ts";
export * from "./codecs/mod.ts";
export * from "./channel/mod.ts";
export * from "./workers/mod.ts";
