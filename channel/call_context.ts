/**
 * What a handler receives beside its param: the {@linkcode CallContext}. It lives apart from
 * types.ts because it names the {@linkcode Channel} class, which the engine's files (importing
 * types.ts) must not depend on.
 *
 * @example
 * ```ts
 * import { type CallContext, openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const handlers = { whoami: (_: undefined, ctx: CallContext) => ctx.method };
 * const [a, b] = memoryPair();
 * const [server, client] = await Promise.all([
 *   openChannel(a, { codec: jsonCodec(), handlers }),
 *   openChannel<typeof handlers>(b, { codec: jsonCodec() }),
 * ]);
 * assert.equal(await client.remote.whoami(), "whoami");
 * await Promise.all([client.close(), server.close()]);
 * ```
 *
 * @module
 */

import type { Channel } from "./channel.ts";
import type { CallDetails } from "./types.ts";

/**
 * What a handler receives beside its param: the call's method, a signal that fires when the
 * caller cancels, the deadline passes or the channel closes, the deadline itself, and the
 * channel, to call the peer back.
 *
 * @typeParam Peer The handlers the peer serves, for typed call-backs through `channel`.
 */
export interface CallContext<Peer extends object = Record<string, never>> extends CallDetails {
  /** The channel the call arrived on. */
  readonly channel: Channel<Peer>;
}
