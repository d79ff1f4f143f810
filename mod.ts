/**
 * conduit: streaming inter-process communication for Deno. Typed channels over stdio, Unix
 * sockets, TCP, NATS and in-memory transports, with pluggable codecs.
 *
 * This entrypoint is the everyday set: open a channel, spawn and serve workers, pool them,
 * and the errors and option types those use. The layers beneath have subpaths of their own,
 * so a program loads only what it imports: `@conduit/ipc/transports/unix` (and `tcp`, `stdio`,
 * `nats`, `memory`), `@conduit/ipc/codecs/json` (and `msgpack`, `structured`, `protobuf`,
 * `arrow`, `raw`), `@conduit/ipc/framing`, `@conduit/ipc/protocol` (the wire format, for peer
 * implementers), and `@conduit/ipc/channel` and `@conduit/ipc/workers` for their defaults.
 *
 * @example A typed channel over an in-memory pair
 * ```ts
 * import { openChannel } from "@conduit/ipc";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { memoryPair } from "@conduit/ipc/transports/memory";
 * import assert from "node:assert/strict";
 *
 * const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };
 * const [a, b] = memoryPair();
 * const [server, client] = await Promise.all([
 *   openChannel(a, { codec: jsonCodec(), handlers }),
 *   openChannel<typeof handlers>(b, { codec: jsonCodec() }),
 * ]);
 * assert.equal(await client.remote.add({ a: 1, b: 2 }), 3);
 * await Promise.all([client.close(), server.close()]);
 * ```
 *
 * @module
 */

// Channels: open one on each end of a transport; call the peer through `remote`.
export { openChannel } from "./channel/channel.ts";
export type {
  AuthOptions,
  Channel,
  ChannelOptions,
  HeartbeatOptions,
  MethodCodec,
  PeerInfo,
  ResultOf,
} from "./channel/channel.ts";
export type {
  AnyHandler,
  CallDetails,
  CallOptions,
  CheckedHandlers,
  HandlerTakesOneParam,
  IncomingCallInfo,
  Interceptor,
  IsOneParamHandler,
  MethodName,
  OutgoingCallInfo,
  ParamOf,
  RemoteArgs,
  RemoteMethod,
  RemoteOf,
  RemoteReturn,
  RemoteStream,
} from "./channel/types.ts";
export type { CallContext } from "./channel/call_context.ts";
export { transfer } from "./transfer.ts";

// Servers: accept connections on a listener, one channel each.
export { serve } from "./channel/serve.ts";
export type { Connection, ServeOptions, Server } from "./channel/serve.ts";

// Workers: a typed subprocess, and a pool of them.
export { spawnWorker } from "./workers/spawn_worker.ts";
export type {
  SpawnWorkerOptions,
  WorkerCommand,
  WorkerTransportKind,
} from "./workers/spawn_worker.ts";
export type { WorkerHandle } from "./workers/worker_handle.ts";
export type { WorkerPermissions, WorkerRuntime } from "./workers/spawn_worker_options.ts";
export { serveWorker } from "./workers/serve_worker_lazy.ts";
export type { ServeWorkerOptions } from "./workers/serve_worker_lazy.ts";
export { WorkerPool } from "./workers/worker_pool.ts";
export type {
  PoolRemoteOf,
  StreamSource,
  WorkerPoolOptions,
  WorkerPoolStats,
} from "./workers/worker_pool.ts";

// Errors: every failure conduit reports is one of these, all `ConduitError`s.
export {
  CodecError,
  ConduitError,
  FrameTooLargeError,
  FramingError,
  TransportClosedError,
} from "./errors.ts";
export {
  AuthenticationError,
  CallCancelledError,
  ConnectionClosedError,
  DeadlineExceededError,
  DrainTimeoutError,
  HandshakeError,
  MethodNotFoundError,
  ProtocolError,
  RemoteError,
} from "./channel/errors.ts";
export type { PeerGoodbye } from "./channel/errors.ts";
export {
  CallNotReplayableError,
  CrashLoopError,
  PoolClosedError,
  PoolQueueFullError,
  WorkerExitedError,
} from "./workers/errors.ts";

// The contracts the layers meet at.
export type { Listener, Transport } from "./transports/types.ts";
export type { Codec } from "./codecs/types.ts";
