/**
 * Transports over a child process's standard input and output.
 *
 * - Parent side: {@linkcode spawnTransport} spawns a program and talks to it over its
 *   stdin/stdout; {@linkcode childTransport} wraps a `Deno.ChildProcess` you spawned
 *   yourself. stderr is inherited, discarded, or handed to a callback line by line; a piped
 *   stderr is always drained, since a full pipe would block the child.
 * - Child side: {@linkcode stdioTransport} talks to the parent over `Deno.stdin` and
 *   `Deno.stdout`. While it is in use nothing else may write to stdout (no `console.log`:
 *   log to stderr with `console.error`).
 * - On Linux, with FFI permission, either side enlarges a busy pipe to 1 MiB (see
 *   {@linkcode DEFAULT_PIPE_BUFFER_BYTES}); `pipeBufferBytes: 0` turns that off.
 *
 * @example A child that echoes, driven by its parent
 * ```ts
 * import { spawnTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * // `cat` echoes stdin to stdout; a Deno child would use stdioTransport().
 * await using child = spawnTransport("cat");
 * const writer = child.writable.getWriter();
 * await writer.write(new TextEncoder().encode("hello"));
 * await writer.close(); // cat sees the end of its input, echoes, and exits
 * assert.equal(await new Response(child.readable).text(), "hello");
 * assert.equal((await child.status).code, 0);
 * ```
 *
 * @module
 */

// The types this module's API shows, so that its documentation is complete on its own.
export type { Transport } from "./types.ts";
export * from "./stdio_child.ts";
export * from "./stdio_parent.ts";
