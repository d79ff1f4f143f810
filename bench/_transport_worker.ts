// The worker of bench/worker_transport.ts: an echo served with the structured codec, through
// serveWorker (stdio or the Unix socket the parent names), or, when _quiet_stdio_preload.ts
// ran first, over the real stdout it kept.

import { openChannel } from "@conduit/ipc/channel";
import { structuredCodec } from "@conduit/ipc/codecs/structured";
import type { Transport } from "@conduit/ipc/transports";
import { serveWorker } from "@conduit/ipc/workers/serve";

/** What the parent calls. */
export const handlers = {
  echo: (value: unknown): unknown => value,
  /** Writes text to stdout the way a careless handler would, by one of several routes. */
  print: async ({ text, how }: { text: string; how: PrintRoute }): Promise<void> => {
    const line = new TextEncoder().encode(text + "\n");
    if (how === "console and Deno.stdout") {
      console.log(text);
      Deno.stdout.writeSync(line);
    } else if (how === "node:process") {
      const { default: process } = await import("node:process");
      await new Promise((done) => process.stdout.write(line, done));
    } else if (how === "subprocess") {
      // A program the handler runs, its stdout inherited: fd 1 itself.
      await new Deno.Command("echo", { args: [text], stdout: "inherit" }).output();
    }
  },
};

/** The ways `print` writes to stdout. */
export type PrintRoute = "console and Deno.stdout" | "node:process" | "subprocess";

/** The worker's API, for the parent's types. */
export type TransportWorkerApi = typeof handlers;

if (import.meta.main) {
  if (Deno.args.includes("--noisy")) console.log("worker starting up"); // issue 12, observation 1
  const stdout = (globalThis as Record<symbol, Deno.FsFile | undefined>)[
    Symbol.for("conduit.stdout")
  ];
  if (stdout === undefined) {
    await serveWorker(handlers, { codec: structuredCodec() });
  } else {
    const channel = await openChannel(quietTransport(stdout), {
      codec: structuredCodec(),
      handlers,
      trustPeer: true,
      defaultTimeout: Infinity,
    });
    await channel.closed.catch(() => {});
    Deno.exit(0);
  }
}

/** stdin, and writes to the stdout the preload kept, as stdioTransport writes: chunks up to
 * 64 KiB synchronously, larger ones asynchronously. */
function quietTransport(stdout: Deno.FsFile): Transport {
  const writable = new WritableStream<Uint8Array>({
    async write(chunk) {
      let written = 0;
      if (chunk.length <= 64 * 1024) {
        while (written < chunk.length) written += stdout.writeSync(chunk.subarray(written));
      }
      while (written < chunk.length) written += await stdout.write(chunk.subarray(written));
    },
  });
  return {
    readable: Deno.stdin.readable,
    writable,
    close: () => writable.close().catch(() => {}),
    abort: () => Deno.exit(1),
    [Symbol.asyncDispose]: () => writable.close().catch(() => {}),
  };
}
