// Run by `deno run --preload` before a worker module (spawnWorker adds it for the stdio
// transport): everything that would print to the channel's pipe — `console.log` and its
// siblings, `Deno.stdout` — prints to stderr instead, which the parent forwards line by line.
// So a `console.log` at module load, before `serveWorker`, or a `Deno.stdout.writeSync` in a
// handler cannot land between two frames. The real stdout is kept for the stdio transport.
// It imports only what it needs, as it runs before every worker starts. `node:process`'s
// `process.stdout` and subprocesses inheriting fd 1 still reach the pipe (moving fd 1 itself
// needs FFI); the parent then fails with an error that quotes what was written.

import { REAL_STDOUT } from "../transports/_real_stdout.ts";
import { consoleToStderr } from "./_console_to_stderr.ts";

if (!(REAL_STDOUT in globalThis)) {
  Object.defineProperty(globalThis, REAL_STDOUT, { value: Deno.stdout });
  Object.defineProperty(Deno, "stdout", {
    value: Deno.stderr,
    configurable: true,
    writable: true,
    enumerable: true,
  });
  consoleToStderr();
}
