// A worker's channel and its typed `remote`, the same for a process and a thread: each call is
// tracked by the worker's KeepAlive (so an unref'd worker still answers an awaited call) and
// its failures pass through the worker's translation into WorkerExitedError.

import { Channel, type ChannelOptions } from "../channel/channel.ts";
import { remoteProxy } from "../channel/_remote.ts";
import type { CallOptions, RemoteOf } from "../channel/types.ts";
import type { Transport } from "../transports/types.ts";
import type { KeepAlive } from "./_keep_alive.ts";
import { type ChannelCall, type Translate, WorkerCall } from "./_worker_call.ts";
import { DEFAULT_WORKER_CALL_TIMEOUT, DEFAULT_WORKER_TRUST_PEER } from "./worker_env.ts";

/** A worker's open (or opening) channel and the remote its handle shows. */
export interface WorkerChannel<Api extends object> {
  channel: Channel<Api>;
  remote: RemoteOf<Api>;
}

/** Opens a channel over `transport`; the handshake is under way when this returns. */
export function workerChannel<Api extends object>(
  transport: Transport,
  options: ChannelOptions,
  worker: { keepAlive: KeepAlive; translate: Translate },
): WorkerChannel<Api> {
  const channel = new Channel<Api>(transport, options);
  const call = channel.call.bind(channel) as unknown as (
    method: string,
    param: unknown,
    options: CallOptions | undefined,
  ) => ChannelCall;
  const { keepAlive, translate } = worker;
  const remote = remoteProxy<Api>((method, param, callOptions) => {
    const inner = call(method, param, callOptions);
    keepAlive.track(inner);
    return new WorkerCall(inner, translate);
  });
  return { channel, remote };
}

/** A worker channel's options: the caller's, over the worker defaults (see worker_env.ts). */
export function withWorkerDefaults(options: ChannelOptions): ChannelOptions {
  return {
    trustPeer: DEFAULT_WORKER_TRUST_PEER,
    ...options,
    defaultTimeout: options.defaultTimeout ?? DEFAULT_WORKER_CALL_TIMEOUT,
  };
}
