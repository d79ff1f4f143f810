// The three ways bench/threads_bench.ts and the report's threads section reach a Deno module
// Worker: comlink (npm) over postMessage, a conduit channel over the Web Worker transport,
// and a conduit channel over a shared ring. Each serves `echo` (a value back) and `take` (a
// buffer moved to the worker, its length back).

import * as Comlink from "comlink";
import { type ChannelOptions, openChannel } from "../channel/mod.ts";
import { jsonCodec } from "../codecs/json.ts";
import { rawCodec } from "../codecs/raw.ts";
import { sharedRingPair, sharedRingTransport } from "../transports/shared_ring.ts";
import { transfer, workerTransport } from "../transports/web_worker.ts";

/** The peers compared, comlink (the baseline) first. */
export const THREAD_PEERS = ["comlink", "web worker", "shared ring"] as const;
export type ThreadPeerKind = typeof THREAD_PEERS[number];

/** What both conduit ends use: JSON values, raw bytes for `take`'s param. */
export const THREAD_CHANNEL_OPTIONS: ChannelOptions = {
  codec: jsonCodec(),
  methodCodecs: { take: { param: rawCodec() } },
  maxInFlight: 1024,
};

/** A client of the echo service in a worker. */
export interface ThreadPeer {
  echo(value: unknown): Promise<unknown>;
  /** Moves `bytes` to the worker (transferred, no copy); resolves with the length it got. */
  take(bytes: Uint8Array): Promise<number>;
  close(): Promise<void>;
}

interface Service {
  echo(value: unknown): unknown;
  take(bytes: Uint8Array): number;
}

/** Starts a worker and connects to it the `kind` way. */
export async function threadPeer(kind: ThreadPeerKind): Promise<ThreadPeer> {
  if (kind === "comlink") {
    const worker = new Worker(new URL("./_comlink_worker.ts", import.meta.url), { type: "module" });
    const remote = Comlink.wrap<Service>(worker);
    await remote.echo(0);
    return {
      echo: (value) => remote.echo(value),
      take: (bytes) => remote.take(Comlink.transfer(bytes, [bytes.buffer as ArrayBuffer])),
      close: () => {
        remote[Comlink.releaseProxy]();
        worker.terminate();
        return Promise.resolve();
      },
    };
  }
  const worker = new Worker(new URL("./_threads_worker.ts", import.meta.url), { type: "module" });
  let transport;
  if (kind === "shared ring") {
    const [mine, theirs] = sharedRingPair();
    worker.postMessage({ kind: "ring", end: theirs }, [theirs.port]);
    transport = sharedRingTransport(mine, { worker });
  } else {
    worker.postMessage({ kind: "worker" });
    transport = workerTransport(worker);
  }
  const channel = await openChannel<Service>(transport, THREAD_CHANNEL_OPTIONS);
  await channel.remote.echo(0);
  return {
    echo: (value) => channel.remote.echo(value),
    take: (bytes) => channel.remote.take(transfer(bytes)),
    close: async () => {
      await channel.close();
      worker.terminate();
    },
  };
}
