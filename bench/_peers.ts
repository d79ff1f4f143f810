// The peers every benchmark talks to, in one module:
// - a child process over stdio, a Unix socket or TCP, or a server in this process over a memory
//   pair (`spawnPeer`, `memoryPeer`), which the report's drivers connect to;
// - for the `deno bench` files, set up at load time: the report's conduit peer and raw-frame
//   echo (`conduitPeer`, `rawFramePeer`), killed when the bench exits;
// - a Deno module Worker reached three ways (`threadPeer`): comlink over postMessage, a conduit
//   channel over the Web Worker transport, and one over a shared ring;
// - the time a worker process takes to its first reply, and a bare Deno child to its first byte.

import * as Comlink from "comlink";
import { openChannel } from "../channel/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import { sharedRingPair, sharedRingTransport } from "../transports/shared_ring.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { listenTcp } from "../transports/tcp.ts";
import type { Listener, Transport } from "../transports/types.ts";
import { listenUnix } from "../transports/unix.ts";
import { transfer, workerTransport } from "../transports/web_worker.ts";
import { spawnWorker, type SpawnWorkerOptions } from "../workers/mod.ts";
import type { PingApi } from "./_ping_worker.ts";
import { THREAD_OPTIONS, type ThreadService } from "./_thread_worker.ts";
import { type CodecName, methodCodecsFor, type TransportName } from "./report/_bench_api.ts";
import { type ConduitClient, conduitClient, RawFrameClient } from "./report/_clients.ts";
import { serveBench } from "./report/children/conduit_peer.ts";
import { serveRawFrames } from "./report/children/raw_frame_echo.ts";

/** A peer process (or an in-process server) and the transport to it. */
export interface Peer {
  readonly transport: Transport;
  readonly pid: number;
  /** Closes the transport, waits for the child to exit, and kills it after a few seconds. */
  close(): Promise<void>;
}

const EXIT_TIMEOUT_MS = 5_000;
const CHILDREN = new URL("./report/children/", import.meta.url);
let socketCount = 0;

/** Spawns `deno run -A script <kind> <address> ...args` connected to us over `kind`. */
export async function spawnPeer(
  kind: TransportName,
  script: URL,
  args: string[],
  socketDir: string,
): Promise<Peer> {
  if (kind === "stdio") {
    const child = spawnTransport(Deno.execPath(), {
      args: ["run", "-A", script.pathname, "stdio", "-", ...args],
      stderr: "inherit",
      exitTimeout: EXIT_TIMEOUT_MS,
    });
    return { transport: child, pid: child.pid, close: () => child.close() };
  }
  // The parent listens, the child connects (its stdin and stdout are then unused).
  const listener: Listener = kind === "unix"
    ? await listenUnix(`${socketDir}/${++socketCount}.sock`)
    : await listenTcp({ port: 0 });
  const address = kind === "unix"
    ? (listener.addr as Deno.UnixAddr).path
    : String((listener.addr as Deno.NetAddr).port);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script.pathname, kind, address, ...args],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  const exitOrKill = async () => {
    const timer = setTimeout(() => kill(child.pid), EXIT_TIMEOUT_MS);
    await child.status;
    clearTimeout(timer);
  };
  try {
    const exited = child.status.then((status) => {
      throw new Error(`The ${kind} peer exited with code ${status.code} before connecting`);
    });
    const transport = await Promise.race([listener.accept(), exited]);
    return {
      transport,
      pid: child.pid,
      async close() {
        await transport.close();
        await exitOrKill();
      },
    };
  } catch (error) {
    kill(child.pid);
    await child.status;
    throw error;
  } finally {
    await listener.close();
  }
}

/** A server in this process over a memory pair: `serve` runs on one end; `pid` is ours. */
export function memoryPeer(serve: (transport: Transport) => Promise<unknown>): Peer {
  const [ours, theirs] = memoryPair();
  const serving = serve(theirs);
  return {
    transport: ours,
    pid: Deno.pid,
    async close() {
      await ours.close();
      await serving;
      await theirs.close();
    },
  };
}

/** Where a `deno bench` file's peer runs. */
export type BenchTransport = "memory" | TransportName;

/** Every transport, in-process first. */
export const BENCH_TRANSPORTS: BenchTransport[] = ["memory", "unix", "tcp", "stdio"];

/** A conduit channel to a peer serving the report's BenchApi with `codec`. */
export async function conduitPeer(
  transport: BenchTransport,
  codec: CodecName,
): Promise<ConduitClient> {
  const peer = transport === "memory"
    ? memoryPeer(async (theirs) => {
      const channel = await serveBench(theirs, codec);
      await channel.closed.catch(() => {});
    })
    : await benchChild(transport, "conduit_peer.ts", [codec]);
  return await conduitClient(peer, (await methodCodecsFor(codec)).methodCodecs);
}

/** Raw length-prefixed frames to an echo peer: the ceiling under the channel. */
export async function rawFramePeer(transport: BenchTransport): Promise<RawFrameClient> {
  const peer = transport === "memory"
    ? memoryPeer(serveRawFrames)
    : await benchChild(transport, "raw_frame_echo.ts", []);
  return new RawFrameClient(peer);
}

let benchDir: string | undefined;
const benchPids: number[] = [];

/** A child peer that lives as long as this bench process. */
async function benchChild(kind: TransportName, script: string, args: string[]): Promise<Peer> {
  if (benchDir === undefined) {
    const dir = benchDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdb" });
    globalThis.addEventListener("unload", () => {
      benchPids.forEach(kill);
      Deno.removeSync(dir, { recursive: true });
    });
  }
  const peer = await spawnPeer(kind, new URL(script, CHILDREN), args, benchDir);
  benchPids.push(peer.pid);
  return peer;
}

function kill(pid: number): void {
  try {
    Deno.kill(pid, "SIGKILL");
  } catch {
    // Exited already.
  }
}

/** The thread peers compared, comlink (the baseline) first. */
export const THREAD_PEERS = ["comlink", "web worker", "shared ring"] as const;
export type ThreadPeerKind = typeof THREAD_PEERS[number];

/** A client of the service in a worker thread (`_thread_worker.ts`). */
export interface ThreadPeer {
  echo(value: unknown): Promise<unknown>;
  /** Moves `bytes` to the worker (transferred, no copy); resolves with the length it got. */
  take(bytes: Uint8Array): Promise<number>;
  close(): Promise<void>;
}

/** Starts a worker and connects to it the `kind` way. */
export async function threadPeer(kind: ThreadPeerKind): Promise<ThreadPeer> {
  const worker = new Worker(new URL("./_thread_worker.ts", import.meta.url), { type: "module" });
  if (kind === "comlink") {
    worker.postMessage({ kind });
    const remote = Comlink.wrap<ThreadService>(worker);
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
  let transport;
  if (kind === "shared ring") {
    const [mine, theirs] = sharedRingPair();
    worker.postMessage({ kind, end: theirs }, [theirs.port]);
    transport = sharedRingTransport(mine, { worker });
  } else {
    worker.postMessage({ kind });
    transport = workerTransport(worker);
  }
  const channel = await openChannel<ThreadService>(transport, THREAD_OPTIONS);
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

/** Spawns the ping worker with `options`; resolves with the ms to its first reply. */
export async function workerFirstReply(options: SpawnWorkerOptions = {}): Promise<number> {
  const started = performance.now();
  const handle = await spawnWorker<PingApi>(PING_WORKER, options);
  await handle.remote.ping();
  const elapsed = performance.now() - started;
  await handle.close();
  return elapsed;
}

/** The ping worker, importing `serveWorker` from `@conduit/ipc/workers/serve` as the README does. */
export const PING_WORKER: URL = new URL("./_ping_worker.ts", import.meta.url);

/** Spawns `deno eval` of a program writing one byte; resolves with the ms to that byte. */
export async function bareFirstByte(): Promise<number> {
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", "Deno.stdout.writeSync(new Uint8Array([1]))"],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  await reader.read();
  const elapsed = performance.now() - started;
  await reader.cancel();
  await child.status;
  return elapsed;
}
