// Peers for the channel benchmarks, set up at load time (outside the timed functions): the
// report's conduit peer and raw-frame echo, in this process over a memory pair or in a child
// process over stdio, a Unix socket or TCP. Child processes are killed when the bench exits.

import type { CodecName, TransportName } from "./report/_bench_api.ts";
import { methodCodecsFor } from "./report/_bench_api.ts";
import { type ConduitClient, conduitClient, RawFrameClient } from "./report/_clients.ts";
import { memoryPeer, type Peer, spawnPeer } from "./report/_peers.ts";
import { serveBench } from "./report/children/conduit_peer.ts";
import { serveRawFrames } from "./report/children/raw_frame_echo.ts";

/** Where a benchmark's peer runs. */
export type BenchTransport = "memory" | TransportName;

/** Every transport, in-process first. */
export const BENCH_TRANSPORTS: BenchTransport[] = ["memory", "unix", "tcp", "stdio"];

const CHILDREN = new URL("./report/children/", import.meta.url);
const socketDir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdb" });
const pids: number[] = [];
globalThis.addEventListener("unload", () => {
  for (const pid of pids) {
    try {
      Deno.kill(pid, "SIGKILL");
    } catch {
      // Exited already.
    }
  }
  Deno.removeSync(socketDir, { recursive: true });
});

/** A conduit channel to a peer serving BenchApi with `codec`. */
export async function conduitPeer(
  transport: BenchTransport,
  codec: CodecName,
): Promise<ConduitClient> {
  const peer = transport === "memory"
    ? memoryPeer(async (theirs) => {
      const channel = await serveBench(theirs, codec);
      await channel.closed.catch(() => {});
    })
    : track(await spawnPeer(transport, new URL("conduit_peer.ts", CHILDREN), [codec], socketDir));
  return await conduitClient(peer, (await methodCodecsFor(codec)).methodCodecs);
}

/** Raw length-prefixed frames to an echo peer: the ceiling under the channel. */
export async function rawFramePeer(transport: BenchTransport): Promise<RawFrameClient> {
  const peer = transport === "memory"
    ? memoryPeer(serveRawFrames)
    : track(await spawnPeer(transport, new URL("raw_frame_echo.ts", CHILDREN), [], socketDir));
  return new RawFrameClient(peer);
}

function track(peer: Peer): Peer {
  pids.push(peer.pid);
  return peer;
}
