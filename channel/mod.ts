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

export {
  DEFAULT_CALL_TIMEOUT,
  DEFAULT_DRAIN_TIMEOUT,
  DEFAULT_HANDSHAKE_TIMEOUT,
  DEFAULT_MAX_IN_FLIGHT,
  DEFAULT_STREAM_WINDOW_BYTES,
  DEFAULT_TRUST_PEER,
  DEFAULT_WRITE_HIGH_WATER_MARK,
  openChannel,
} from "./channel.ts";
// Only `openChannel` opens a channel: the class is public as a type, its constructor is not.
export type {
  AuthOptions,
  Channel,
  ChannelOptions,
  Codec,
  HeartbeatOptions,
  MethodCodec,
  PeerInfo,
  ResultOf,
  Transport,
} from "./channel.ts";
export * from "./types.ts";
export * from "./call_context.ts";
export * from "./errors.ts";
export * from "../wires/error_codec.ts";
export * from "./serve.ts";
export { transfer } from "../transfer.ts";
