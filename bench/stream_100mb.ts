// Issue 12's throughput target: 100 MB of Uint8Array chunks streamed through a conduit channel,
// with the JSON codec (the default until workers move off it) and with the structured codec,
// in the same run, over a Unix socket (both ends in this process) and over a child process's
// stdio (the child is bench/_stream_100mb_peer.ts), and from a worker module spawned with
// spawnWorker's default options (bench/_stream_100mb_worker.ts: the structured codec, stdio,
// no deadline). Only the public API is used: openChannel with `codec`, the stdio and Unix
// transports, spawnWorker and serveWorker.
//
//   deno run -A bench/stream_100mb.ts [--mb 100] [--chunk-kib 64] [--rounds 1] [--json-mb 100]
//
// Prints one line per case: seconds, MB/s, whether each chunk arrived as a Uint8Array with its
// bytes intact, and this process's peak RSS growth. The target: <= 1 s with the structured
// codec and from a worker with default options (21 s measured with JSON when the issue was
// filed). `--json-mb` streams less with JSON
// when its minutes are not wanted; its time is then scaled to the full size and marked so.

import { parseArgs } from "node:util";
import { openChannel } from "@conduit/ipc/channel";
import { childTransport } from "@conduit/ipc/transports/stdio";
import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
import type { Transport } from "@conduit/ipc/transports";
import { spawnWorker } from "@conduit/ipc/workers";
import {
  measureStream,
  type StreamApi,
  streamCodec,
  type StreamCodecName,
  streamHandlers,
  type StreamResult as Result,
} from "./_stream_100mb_api.ts";

const args = parseArgs({
  args: Deno.args,
  options: {
    mb: { type: "string", default: "100" },
    "json-mb": { type: "string" },
    "chunk-kib": { type: "string", default: "64" },
    rounds: { type: "string", default: "1" },
  },
}).values;
const MB = 1_000_000;
const totalBytes = Number(args.mb) * MB;
const jsonBytes = Number(args["json-mb"] ?? args.mb) * MB;
const chunkBytes = Number(args["chunk-kib"]) * 1024;
const rounds = Number(args.rounds);

const PEER = new URL("./_stream_100mb_peer.ts", import.meta.url);

/** Streams `bytes` over a fresh channel pair of `transport` with `codec`. */
async function run(
  transport: "unix" | "stdio",
  codec: StreamCodecName,
  bytes: number,
): Promise<Result> {
  const { ours, close } = transport === "unix" ? await unixPair(codec) : stdioPair(codec);
  const client = await openChannel<StreamApi>(ours, {
    codec: await streamCodec(codec),
    defaultTimeout: Infinity,
  });
  return await measureStream(
    `${transport}/${codec}`,
    client.remote,
    { bytes, chunkBytes },
    async () => {
      await client.close();
      await close();
    },
  );
}

const WORKER = new URL("./_stream_100mb_worker.ts", import.meta.url);

/** Streams `bytes` from a worker spawned with spawnWorker's default options. */
async function runWorker(bytes: number): Promise<Result> {
  const worker = await spawnWorker<StreamApi>(WORKER);
  return await measureStream("worker", worker.remote, { bytes, chunkBytes }, async () => {
    await worker.close();
  });
}

async function unixPair(
  codec: StreamCodecName,
): Promise<{ ours: Transport; close: () => Promise<void> }> {
  const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "c100" });
  const listener = await listenUnix(`${dir}/s`);
  const accepted = listener[Symbol.asyncIterator]().next();
  const ours = await connectUnix(`${dir}/s`);
  const theirs = (await accepted).value as Transport;
  // Not awaited here: the handshake completes once the client opens its end too.
  const server = openChannel(theirs, {
    codec: await streamCodec(codec),
    handlers: streamHandlers,
    defaultTimeout: Infinity,
  });
  return {
    ours,
    async close() {
      await (await server).closed.catch(() => {});
      await listener.close();
      await Deno.remove(dir, { recursive: true });
    },
  };
}

function stdioPair(codec: StreamCodecName): { ours: Transport; close: () => Promise<void> } {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", PEER.pathname, codec],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const ours = childTransport(child);
  return {
    ours,
    async close() {
      await ours.close();
    },
  };
}

const rows: string[] = [];
const line = (text: string) => {
  rows.push(text);
  console.log(text);
};
line(
  `stream ${totalBytes / MB} MB in ${chunkBytes / 1024} KiB Uint8Array chunks, ` +
    `Deno ${Deno.version.deno}, ${rounds} round(s), interleaved`,
);
const report = (round: number, label: string, r: Result) => {
  const scaled = r.seconds * totalBytes / r.bytes;
  const note = r.bytes < totalBytes ? ` (${(r.bytes / MB).toFixed(0)} MB measured, scaled)` : "";
  line(
    `round ${round} ${label} ${scaled.toFixed(2)} s${note}` +
      `  ${(r.bytes / MB / r.seconds).toFixed(0)} MB/s` +
      `  chunks ${r.intact ? "arrive as Uint8Array, intact" : "arrive changed (not Uint8Array)"}` +
      `  peak RSS +${(r.rssGrowth / 2 ** 20).toFixed(0)} MiB`,
  );
};
for (let round = 1; round <= rounds; round++) {
  report(round, "worker defaults    ", await runWorker(totalBytes));
  for (const transport of ["unix", "stdio"] as const) {
    for (const codec of ["structured", "json"] as const) {
      const bytes = codec === "json" ? jsonBytes : totalBytes;
      report(
        round,
        `${transport.padEnd(5)} ${codec.padEnd(13)}`,
        await run(transport, codec, bytes),
      );
    }
  }
}
