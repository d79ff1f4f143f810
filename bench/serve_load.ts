/**
 * A load test of `serve()`: 1,000 clients over a Unix socket against a server in its own
 * process, good ones making calls back to back and hostile ones (garbage, silence, aborts, a
 * HELLO followed by an unknown frame) reconnecting as fast as the server lets them. Prints the
 * calls/s of the good clients alone and beside the hostile ones, in interleaved rounds.
 *
 *   deno run -A bench/serve_load.ts [--good 500] [--hostile 500] [--seconds 5] [--rounds 2]
 *
 * @module
 */

import { openChannel, serve } from "../channel/mod.ts";
import { jsonCodec } from "../codecs/json.ts";
import { encodeFrame } from "../framing/mod.ts";
import { helloBody } from "../protocol/handshake.ts";
import type { Transport } from "../transports/types.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";

const codec = jsonCodec();
const SELF = new URL(import.meta.url).pathname;
const handlers = { echo: (n: number) => n };

function arg(name: string, fallback: number): number {
  const at = Deno.args.indexOf(`--${name}`);
  return at >= 0 ? Number(Deno.args[at + 1]) : fallback;
}

if (Deno.args[0] === "--server") {
  // The server process: serves until its stdin ends.
  const server = serve(await listenUnix(Deno.args[1]), {
    codec,
    handlers,
    maxConnections: 4000,
    // Silent clients hold a slot this long; the good ones' handshakes finish well within it
    // even on a loaded machine (at 1 s some did not, at a load of 17 on 2 cores).
    handshakeTimeout: 3000,
  });
  console.log("ready");
  for await (const _ of Deno.stdin.readable) { /* wait for the end */ }
  await server.close();
  Deno.exit(0);
}

const GOOD = arg("good", 500);
const HOSTILE = arg("hostile", 500);
const SECONDS = arg("seconds", 5);
const ROUNDS = arg("rounds", 2);

async function connect(path: string): Promise<Transport> {
  for (;;) {
    try {
      return await connectUnix(path);
    } catch (error) {
      if (!(error instanceof Deno.errors.WouldBlock)) throw error;
      await new Promise((resolve) => setTimeout(resolve, 1 + Math.random() * 10));
    }
  }
}

async function drain(transport: Transport): Promise<void> {
  try {
    for await (const _ of transport.readable) { /* until the server ends it */ }
  } catch { /* a reset ends it too */ }
}

const hello = (() => {
  const body = helloBody({
    codec: "json",
    maxFrameBytes: 1 << 20,
    maxInFlight: 8,
    streamWindowBytes: 1024,
  });
  return encodeFrame(new Uint8Array([0x01, ...body]));
})();

/** One hostile client's loop, by kind, until `until`. */
async function hostile(path: string, kind: number, until: number): Promise<number> {
  let connections = 0;
  while (performance.now() < until) {
    const transport = await connect(path);
    connections++;
    const writer = transport.writable.getWriter();
    writer.closed.catch(() => {});
    switch (kind % 4) {
      case 0: // garbage instead of a HELLO
        await writer.write(crypto.getRandomValues(new Uint8Array(256))).catch(() => {});
        writer.releaseLock();
        await drain(transport);
        break;
      case 1: // silence until the handshake timeout
        writer.releaseLock();
        await drain(transport);
        break;
      case 2: // a HELLO, then gone
        await writer.write(hello).catch(() => {});
        writer.releaseLock();
        await transport.abort(new Error("gone"));
        break;
      default: // a HELLO, then a frame of an unknown kind
        await writer.write(new Uint8Array([...hello, ...encodeFrame(new Uint8Array([0x7f, 1]))]))
          .catch(() => {});
        writer.releaseLock();
        await drain(transport);
    }
    await transport.close();
  }
  return connections;
}

if (Deno.args[0] === "--hostile") {
  // A process of hostile clients: runs them for the given seconds, prints their connections.
  const [, target, count, seconds] = Deno.args;
  const until = performance.now() + Number(seconds) * 1000;
  const made = await Promise.all(
    Array.from({ length: Number(count) }, (_, i) => hostile(target, i, until)),
  );
  console.log(made.reduce((a, b) => a + b, 0));
  Deno.exit(0);
}

async function round(
  path: string,
  withHostile: boolean,
): Promise<{ calls: number; hostileConnections: number; failures: number }> {
  const clients = await Promise.all(
    Array.from(
      { length: GOOD },
      async () => openChannel<typeof handlers>(await connect(path), { codec }),
    ),
  );
  const until = performance.now() + SECONDS * 1000;
  let failures = 0;
  // The hostile clients run in a process of their own, so their work does not slow the good
  // clients' process: what they cost the server is what is measured.
  const hostiles = withHostile
    ? [
      new Deno.Command(Deno.execPath(), {
        args: ["run", "-A", SELF, "--hostile", path, String(HOSTILE), String(SECONDS)],
        stdout: "piped",
        stderr: "inherit",
      }).output().then((out) => {
        if (!out.success) throw new Error(`the hostile clients' process failed (${out.code})`);
        return Number(new TextDecoder().decode(out.stdout));
      }),
    ]
    : [];
  const counts = await Promise.all(clients.map(async (client) => {
    let calls = 0;
    while (performance.now() < until) {
      try {
        await client.remote.echo(calls);
        calls++;
      } catch (error) {
        if (failures++ === 0) console.error("first failed call:", error);
      }
    }
    return calls;
  }));
  const hostileConnections = (await Promise.all(hostiles)).reduce((a, b) => a + b, 0);
  await Promise.all(clients.map((client) => client.close()));
  return { calls: counts.reduce((a, b) => a + b, 0), hostileConnections, failures };
}

const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdload" });
const path = `${dir}/s`;
const child = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", SELF, "--server", path],
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
await lines.read(); // "ready"

console.log(
  `serve() load: ${GOOD} good clients, ${HOSTILE} hostile, ${SECONDS} s a round, ${ROUNDS} rounds`,
);
const alone: number[] = [];
const beside: number[] = [];
for (let r = 0; r < ROUNDS; r++) {
  for (const withHostile of [false, true]) {
    const result = await round(path, withHostile);
    const rate = result.calls / SECONDS;
    (withHostile ? beside : alone).push(rate);
    console.log(
      `round ${r + 1} ${withHostile ? "with hostile" : "good only   "}: ${
        Math.round(rate)
      } calls/s, ` +
        `${result.failures} failed calls, ${result.hostileConnections} hostile connections`,
    );
  }
}
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(
  `good clients: ${Math.round(mean(alone))} calls/s alone, ${
    Math.round(mean(beside))
  } beside the hostile ones ` +
    `(ratio ${(mean(beside) / mean(alone)).toFixed(2)})`,
);
const writer = child.stdin.getWriter();
await writer.close();
const status = await child.status;
await lines.cancel();
console.log(`server exited with ${status.code}`);
await Deno.remove(dir, { recursive: true });
