/**
 * Channels: the conduit protocol over any transport and codec. Open one on each end with
 * {@linkcode openChannel}; each end serves its `handlers` and calls the other's through
 * `channel.remote`, with streams both ways, cancellation, deadlines, typed errors and a
 * graceful close. The wire format is specified in docs/protocol.md.
 *
 * @example
 * ```ts
 * import { openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const handlers = { greet: (name: string) => `hello ${name}` };
 * const [a, b] = memoryPair();
 * const [server, client] = await Promise.all([
 *   openChannel(a, { codec: jsonCodec(), handlers }),
 *   openChannel<typeof handlers>(b, { codec: jsonCodec() }),
 * ]);
 * assert.equal(await client.remote.greet("ada"), "hello ada");
 * await Promise.all([client.close(), server.close()]);
 * ```
 *
 * @module
 */

export * from "./channel.ts";
export * from "./types.ts";
export * from "./call_context.ts";
export * from "./errors.ts";
export * from "../protocol/envelope.ts";
export * from "../protocol/frame_kinds.ts";
export { MAX_METHOD_BYTES } from "../protocol/limits.ts";
// Wire internals, public here until the API is curated; a peer implementer uses
// @conduit/ipc/protocol.
export {
  dataCost,
  encodeBodyFrame,
  encodeCall,
  encodeCredit,
  encodeIdFrame,
  encodeNotify,
} from "../protocol/_encode.ts";
export * from "./error_codec.ts";
export * from "./serve.ts";
