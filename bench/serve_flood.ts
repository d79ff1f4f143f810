/**
 * Good clients against connections that never send a HELLO, and in a burst of their own:
 * `serve()` over a Unix socket in its own process with the default caps (`maxHandshakes`,
 * `handshakeTimeout`), the silent connections made by a third process.
 *
 *   deno run -A bench/serve_flood.ts burst [--clients 1000] [--auth]
 *   deno run -A bench/serve_flood.ts hold [--silent 1000] [--tries 20]
 *   deno run -A bench/serve_flood.ts storm [--loops 8] [--tries 20]
 *
 * - burst: `--clients` good clients open a channel at once and call once each; prints how
 *   many failed (a burst must wait, not push itself out).
 * - hold: `--silent` silent connections held open, each made again as soon as the server drops
 *   it; then `--tries` good clients in turn open, call and close. Prints how many got in and
 *   how long it took them.
 * - storm: silent connections made as fast as `--loops` connect loops can; the same tries.
 *
 * @module
 */

import { openChannel, serve } from "../channel/mod.ts";
import { jsonCodec } from "../codecs/json.ts";
import type { Transport } from "../transports/types.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";

const codec = jsonCodec();
const SELF = new URL(import.meta.url).pathname;
const handlers = { echo: (n: number) => n };
const SECRET = "a secret of the bench, 32 bytes or more";

function arg(name: string, fallback: number): number {
  const at = Deno.args.indexOf(`--${name}`);
  return at >= 0 ? Number(Deno.args[at + 1]) : fallback;
}

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

/** Holds `transport` without writing to it until the server ends it. */
async function holdSilent(transport: Transport): Promise<void> {
  try {
    for await (const _ of transport.readable) { /* the server's HELLO, then its end */ }
  } catch { /* a reset ends it too */ }
  await transport.close().catch(() => {});
}

if (Deno.args[0] === "--server") {
  // Serves until its stdin ends; prints how many handshakes it dropped, once a second.
  let dropped = 0;
  const server = serve(await listenUnix(Deno.args[1]), {
    codec,
    handlers,
    auth: Deno.args.includes("--auth") ? { secret: SECRET } : undefined,
    onError: (error) => {
      if (String((error as Error).cause).includes("Dropped during its handshake")) dropped++;
    },
  });
  console.log("ready");
  const report = setInterval(() => console.error(`server: ${dropped} handshakes dropped`), 1000);
  for await (const _ of Deno.stdin.readable) { /* wait for the end */ }
  clearInterval(report);
  await server.close();
  Deno.exit(0);
}

if (Deno.args[0] === "--silent") {
  // `count` loops, each holding one silent connection at a time ("hold"), or making them
  // without waiting for the server to end them ("storm"); runs until killed.
  const [, path, mode, count] = Deno.args;
  for (let i = 0; i < Number(count); i++) {
    (async () => {
      for (;;) {
        const connected = connect(path);
        // hold: wait for the server to end this one; storm: only for the connect.
        if (mode === "hold") await connected.then(holdSilent, () => {});
        else await connected.then((transport) => void holdSilent(transport), () => {});
      }
    })();
  }
  await new Promise(() => {});
}

const mode = Deno.args[0];
const auth = Deno.args.includes("--auth") ? { secret: SECRET } : undefined;
const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cdflood" });
const path = `${dir}/s`;
const server = new Deno.Command(Deno.execPath(), {
  args: ["run", "-A", SELF, "--server", path, ...(auth ? ["--auth"] : [])],
  stdin: "piped",
  stdout: "piped",
  stderr: "inherit",
}).spawn();
const lines = server.stdout.pipeThrough(new TextDecoderStream()).getReader();
await lines.read(); // "ready"

async function goodCall(i: number): Promise<void> {
  const client = await openChannel<typeof handlers>(await connect(path), { codec, auth });
  if (await client.remote.echo(i) !== i) throw new Error("wrong answer");
  await client.close();
}

if (mode === "burst") {
  const clients = arg("clients", 1000);
  const started = performance.now();
  const results = await Promise.allSettled(Array.from({ length: clients }, (_, i) => goodCall(i)));
  const failed = results.filter((result) => result.status === "rejected");
  console.log(
    `burst: ${clients} clients${auth ? " with auth" : ""}, ${failed.length} failed, ` +
      `${Math.round(performance.now() - started)} ms`,
  );
  if (failed.length > 0) console.log("first failure:", (failed[0] as PromiseRejectedResult).reason);
} else if (mode === "hold" || mode === "storm") {
  const loops = String(mode === "hold" ? arg("silent", 1000) : arg("loops", 8));
  const silent = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SELF, "--silent", path, mode, loops],
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  await new Promise((resolve) => setTimeout(resolve, 2000)); // let the flood fill the caps
  const tries = arg("tries", 20);
  const times: number[] = [];
  for (let i = 0; i < tries; i++) {
    const started = performance.now();
    try {
      await goodCall(i);
      times.push(performance.now() - started);
    } catch (error) {
      console.log(`try ${i + 1} failed:`, String(error));
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  silent.kill();
  await silent.status;
  times.sort((a, b) => a - b);
  const ms = (t: number | undefined) => t === undefined ? "-" : t.toFixed(1);
  console.log(
    `${mode}: ${times.length} of ${tries} good clients got in; open+call ms ` +
      `p50 ${ms(times[times.length >> 1])}, max ${ms(times.at(-1))}`,
  );
} else {
  console.error("usage: deno run -A bench/serve_flood.ts burst|hold|storm [options]");
}

await server.stdin.close();
await server.status;
await lines.cancel();
await Deno.remove(dir, { recursive: true });
