// Where this process's real stdout is kept when something moved `Deno.stdout` away from it:
// a conduit worker runs a preload first (`quietPreloadUrl` in `workers/spawn_worker.ts`), which points `Deno.stdout` at
// stderr (so no stray write lands between two frames) and keeps the real one here for the
// stdio transport. A registered symbol, because the preload is a data: URL that cannot import
// this module.

/** The `Symbol.for` key of the global under which the real `Deno.stdout` is kept. */
export const REAL_STDOUT_KEY = "conduit.stdout";

/** The global under which the real `Deno.stdout` is kept. */
export const REAL_STDOUT: unique symbol = Symbol.for(REAL_STDOUT_KEY) as never;

/** This process's real stdout: the one kept by the worker preload, or `Deno.stdout`. */
export function realStdout(): typeof Deno.stdout {
  return (globalThis as { [REAL_STDOUT]?: typeof Deno.stdout })[REAL_STDOUT] ?? Deno.stdout;
}
