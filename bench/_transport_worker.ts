// The worker of bench/worker_transport.ts: an echo served with the structured codec, through
// serveWorker (stdio or the Unix socket the parent names), or, when _quiet_stdio_preload.ts
// ran first, over the real stdout it kept.

import { openChannel } from "@conduit/ipc/channel";
import { structuredCodec } from "@conduit/ipc/codecs/structured";
import type { Transport } from "@conduit/ipc/transports";
import { serveWorker } from "@conduit/ipc/workers";

/** What the parent calls. */
export const handlers = {
  echo: (value: unknown): unknown => value,
  /** Writes text to stdout the way a careless handler would. */
  print: (text: string): void => {
    console.log(text);
    Deno.stdout.writeSync(new TextEncoder().encode(text + "\n"));
  },
};

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

/** stdin, and synchronous writes to the stdout the preload kept (as stdioTransport writes). */
function quietTransport(stdout: Deno.FsFile): Transport {
  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      let written = 0;
      while (written < chunk.length) written += stdout.writeSync(chunk.subarray(written));
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
