/**
 * The contract between `spawnWorker` (the parent) and `serveWorker` (the worker) beyond the
 * conduit protocol itself: how the worker knows it was started as one, how the parent names
 * the Unix socket to connect to, and what the worker trusts its parent with. Both sides import
 * it; neither imports the other.
 *
 * @module
 */

import { inWorker, onDeno, threadData } from "../_runtime.ts";

/**
 * The environment variable that tells a process `spawnWorker` started it as a worker: set to
 * `"1"`, and readable by every Deno worker module (`spawnWorker` grants reading it).
 * `serveWorker` refuses to serve without it, so a parent that imports a value from a worker
 * module does not start serving in its own process. A worker started another way (a
 * `WorkerCommand` running `deno`) needs it set and `--allow-env=CONDUIT_WORKER`.
 *
 * @example
 * ```ts
 * import { WORKER_ENV } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(WORKER_ENV, "CONDUIT_WORKER");
 * ```
 */

export const WORKER_ENV = "CONDUIT_WORKER";

/**
 * The environment variable through which `spawnWorker` names the Unix socket a worker
 * connects to (`transport: "unix"`); unset for the stdio transport.
 *
 * @example
 * ```ts
 * import { WORKER_SOCKET_ENV } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(WORKER_SOCKET_ENV, "CONDUIT_WORKER_SOCKET");
 * ```
 */
export const WORKER_SOCKET_ENV = "CONDUIT_WORKER_SOCKET";

/** The default `trustPeer` of both ends of a worker's channel: true (the parent is our owner). */
export const DEFAULT_WORKER_TRUST_PEER = true;

/**
 * The default `defaultTimeout` of both ends of a worker's channel: `Infinity`, no deadline.
 * A worker runs your own long jobs (a 70 s stream, a 65 s call), so nothing ends them unless
 * you ask: pass `timeout` per call or `defaultTimeout` to `spawnWorker`/`serveWorker`. Network
 * channels keep `DEFAULT_CALL_TIMEOUT` (60 s), because a remote peer can stall
 * without ever closing the connection, while a worker that dies closes its pipes.
 *
 * @example
 * ```ts
 * import { DEFAULT_WORKER_CALL_TIMEOUT } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_WORKER_CALL_TIMEOUT, Infinity);
 * ```
 */
export const DEFAULT_WORKER_CALL_TIMEOUT: number = Infinity;

// While a worker serves over stdout, every console method that would print to stdout prints
// to stderr instead: one stray console.log would otherwise land between two frames and break
// the stream. console.error, warn, trace and assert already print to stderr; group and
// groupEnd print through console.log, so their labels and indentation follow it.
type Method =
  | "log"
  | "info"
  | "debug"
  | "dir"
  | "dirxml"
  | "table"
  | "count"
  | "countReset"
  | "time"
  | "timeLog"
  | "timeEnd";

/**
 * Redirects console output from stdout to stderr; returns a function that undoes it. It uses
 * nothing outside its own body but globals: its source also runs as the worker preload
 * (`quietPreloadUrl` in `spawn_worker.ts`).
 */
export function consoleToStderr(): () => void {
  const methods: readonly Method[] = [
    "log",
    "info",
    "debug",
    "dir",
    "dirxml",
    "table",
    "count",
    "countReset",
    "time",
    "timeLog",
    "timeEnd",
  ];
  const saved = new Map<Method, unknown>();
  for (const method of methods) saved.set(method, console[method]);
  const error = console.error;
  const warn = console.warn;
  const log = (...data: unknown[]) => error(...data);
  // Deno's own inspect on Deno; node:util's on Node and Bun (fetched when first used, with
  // `process.getBuiltinModule`, since this function may import nothing).
  type Inspect = (item: unknown, options?: object) => string;
  const runtime = globalThis as {
    Deno?: { inspect: Inspect };
    process?: { getBuiltinModule(id: string): { inspect: Inspect } };
  };
  const inspect: Inspect = (item, options) =>
    (runtime.Deno?.inspect ?? runtime.process!.getBuiltinModule("node:util").inspect)(
      item,
      options,
    );
  const inspected = (item: unknown, options?: object) =>
    error(inspect(item, { colors: false, ...options }));
  const counts = new Map<string, number>();
  const timers = new Map<string, number>();
  const elapsed = (label: string) =>
    `${label}: ${(performance.now() - timers.get(label)!).toFixed(3)}ms`;

  console.log = log;
  console.info = log;
  console.debug = log;
  console.dir = inspected;
  console.dirxml = (...data: unknown[]) => error(...data);
  // Deno's table layout is private to its console: print the data itself instead.
  console.table = (data: unknown) => inspected(data);
  console.count = (label = "default") => {
    const n = (counts.get(label) ?? 0) + 1;
    counts.set(label, n);
    error(`${label}: ${n}`);
  };
  console.countReset = (label = "default") => {
    if (counts.delete(label)) return;
    warn(`Count for '${label}' does not exist`);
  };
  console.time = (label = "default") => {
    if (timers.has(label)) return warn(`Timer '${label}' already exists`);
    timers.set(label, performance.now());
  };
  console.timeLog = (label = "default", ...data: unknown[]) => {
    if (!timers.has(label)) return warn(`Timer '${label}' does not exist`);
    error(elapsed(label), ...data);
  };
  console.timeEnd = (label = "default") => {
    if (!timers.has(label)) return warn(`Timer '${label}' does not exist`);
    error(elapsed(label));
    timers.delete(label);
  };

  return () => {
    for (const [method, fn] of saved) {
      (console as unknown as Record<Method, unknown>)[method] = fn;
    }
  };
}

/**
 * On Node and Bun, what `quietStdout` does on Deno: keeps the real stdout for the stdio
 * transport, which writes to fd 1 itself, and points `process.stdout` at `process.stderr`, so
 * a `process.stdout.write` in a worker lands on stderr, which the parent forwards line by line,
 * and not between two frames; then runs `moveConsole` (`consoleToStderr`), if given, since
 * Bun's console writes to fd 1 without `process.stdout`. Marks the process under
 * `Symbol.for(key)` with the property `process.stdout` had and does nothing when the mark
 * is there already: a preload ran it before the worker module, and `serveWorker` runs it
 * again in case none did. Returns whether it did anything.
 *
 * Self-contained (no imports, nothing from outside its body but globals), so that a parent
 * can run its source before a worker module: `node --import <data: URL>` (see
 * {@linkcode nodeQuietPreloadUrl}); Bun ignores a data: URL given to `--preload` without a
 * word, so there `bun --preload workers/_node_preload.ts`, a file that runs it.
 *
 * @param key The `Symbol.for` key of the mark: `REAL_STDOUT_KEY`, `"conduit.stdout"`.
 * @param moveConsole Moves the console away from stdout; usually `consoleToStderr`.
 * @returns Whether it changed anything (false: it ran already, or this is Deno).
 *
 * @example
 * ```ts
 * import { nodeQuietStdout } from "./worker_env.ts";
 * import assert from "node:assert/strict";
 *
 * // On Deno it leaves everything alone (Deno's own preload does this there).
 * assert.equal(nodeQuietStdout("conduit.stdout"), false);
 * ```
 */
export function nodeQuietStdout(key: string, moveConsole?: () => unknown): boolean {
  const scope = globalThis as { Deno?: unknown; process?: { stdout: unknown; stderr: unknown } };
  // Deno first: reading `globalThis.process` there starts Deno's Node layer, which costs a
  // worker's start-up more than anything else it does (workers/spawn_worker_test.ts).
  if (scope.Deno !== undefined) return false;
  const process = scope.process;
  const mark = Symbol.for(key);
  if (process === undefined || mark in globalThis) return false;
  const stdout = Object.getOwnPropertyDescriptor(process, "stdout");
  Object.defineProperty(globalThis, mark, { value: stdout ?? {}, configurable: true });
  Object.defineProperty(process, "stdout", {
    get: () => process.stderr,
    configurable: true,
    enumerable: true,
  });
  moveConsole?.();
  return true;
}

/**
 * The preload that runs {@linkcode nodeQuietStdout} with {@linkcode consoleToStderr} before a
 * worker module on Node, as a data: URL: `node --import <url> worker.ts`. It needs no file
 * and no TypeScript. (Bun 1.4 ignores a data: URL as `--preload`: give it the file
 * `workers/_node_preload.ts` instead.)
 *
 * @param key The `Symbol.for` key of the mark, `REAL_STDOUT_KEY` (`"conduit.stdout"`).
 * @returns The data: URL.
 *
 * @example
 * ```ts
 * import { nodeQuietPreloadUrl } from "./worker_env.ts";
 * import assert from "node:assert/strict";
 *
 * const url = nodeQuietPreloadUrl("conduit.stdout");
 * assert.ok(url.startsWith("data:text/javascript,"));
 * ```
 */
export function nodeQuietPreloadUrl(key: string): string {
  return "data:text/javascript," +
    encodeURIComponent(`(${nodeQuietStdout})(${JSON.stringify(key)}, ${consoleToStderr});`);
}

// How a thread worker knows that spawnWorker started it: the Worker's name (`self.name` in the
// worker) starts with a mark; on Bun and Node, whose workers see no name, `workerData` carries
// the same mark. An environment variable cannot say it, since a thread shares its process's
// environment; and a Web Worker that someone else started does not serve.
const MARK = "conduit-thread:";

/** The Worker name for a thread worker called `name`. */
export function threadWorkerName(name: string): string {
  return MARK + name;
}

/** The `workerData` of a thread worker called `name`, for Bun (see inThreadWorker). */
export function threadWorkerData(name: string): { conduitThread: string } {
  return { conduitThread: threadWorkerName(name) };
}

/** Whether this code runs in a Web Worker that `spawnWorker(…, { thread: true })` started. */
export function inThreadWorker(): boolean {
  if (!inWorker()) return false;
  if (onDeno()) return String((globalThis as { name?: unknown }).name).startsWith(MARK);
  const data = threadData() as { conduitThread?: unknown } | undefined;
  return String(data?.conduitThread).startsWith(MARK);
}
