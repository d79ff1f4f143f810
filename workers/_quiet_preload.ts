// The code `spawnWorker` runs before a worker module on the stdio transport
// (`deno run --preload <data: URL>`): everything that would print to the channel's pipe —
// `console.log` and its siblings, `Deno.stdout` — prints to stderr instead, which the parent
// forwards line by line. So a `console.log` at module load, before `serveWorker`, or a
// `Deno.stdout.writeSync` in a handler cannot land between two frames; the real stdout is kept
// for the stdio transport (`transports/_byte_channel_transport.ts`). `node:process`'s
// `process.stdout` and subprocesses inheriting fd 1 still reach the pipe (moving fd 1 itself
// needs FFI); the parent then fails with an error that quotes what was written.
//
// A data: URL, built from the source of two self-contained functions: it needs no read
// permission, no network for a remote (JSR) copy of conduit, and no TypeScript module load.

import { REAL_STDOUT_KEY } from "../transports/_byte_channel_transport.ts";
import { consoleToStderr } from "./_console_to_stderr.ts";

let url: string | undefined;

/** The `--preload` module, as a data: URL. */
export function quietPreloadUrl(): string {
  url ??= "data:text/javascript," +
    encodeURIComponent(`(${quietStdout})(${consoleToStderr}, ${JSON.stringify(REAL_STDOUT_KEY)});`);
  return url;
}

/** Keeps the real stdout under `Symbol.for(key)`, points `Deno.stdout` at stderr, moves the console. */
function quietStdout(moveConsole: () => unknown, key: string): void {
  const real = Symbol.for(key);
  if (real in globalThis) return;
  Object.defineProperty(globalThis, real, { value: Deno.stdout });
  Object.defineProperty(Deno, "stdout", {
    value: Deno.stderr,
    configurable: true,
    writable: true,
    enumerable: true,
  });
  moveConsole();
}
