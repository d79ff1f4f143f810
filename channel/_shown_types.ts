// The channel types the worker entrypoints' APIs show, re-exported by each of them (`export type *
// from "../channel/_shown_types.ts"`) so that each entrypoint's documentation is complete on its
// own (deno doc --lint), from one list.

export type * from "./types.ts";
export type {
  AuthOptions,
  Channel,
  ChannelOptions,
  HeartbeatOptions,
  MethodCodec,
  PeerInfo,
  ResultOf,
} from "./channel.ts";
export type { Codec } from "../codecs/types.ts";
export type { PeerGoodbye } from "./errors.ts";
