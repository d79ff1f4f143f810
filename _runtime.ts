// The one runtime seam: what differs between Deno, Node (>= 22) and Bun, for the
// runtime-neutral layers. Every other module of those layers stays free of `Deno.*`,
// `process.*` and `Bun.*` at run time, and nothing here touches a runtime global before it
// is called, so every module loads on each runtime (runtimes/_cases.ts checks it there).
// Anchors: vscode-jsonrpc's `ral.ts`, Hono's adapters.

/** The operating system, in Deno's words (`Deno.build.os`). */
export type RuntimeOs = "linux" | "darwin" | "windows" | "freebsd" | "netbsd" | "openbsd";

/** The parts of Deno's namespace this seam reads, so that it also type-checks off Deno. */
interface DenoLike {
  build: { os: string };
  refTimer(id: number): void;
  unrefTimer(id: number): void;
  env: { get(name: string): string | undefined };
  errors: Record<string, abstract new (...args: never[]) => Error>;
  permissions: {
    querySync?(descriptor: { name: "env"; variable: string }): { state: string };
  };
}

/** The parts of Node's and Bun's `process` this seam reads. */
interface ProcessLike {
  platform: string;
  pid: number;
  env: Record<string, string | undefined>;
}

/** Node's and Bun's timer handles (Deno's are numbers). */
interface TimerHandle {
  ref?(): unknown;
  unref?(): unknown;
}

function deno(): DenoLike | undefined {
  return (globalThis as { Deno?: DenoLike }).Deno;
}

function nodeProcess(): ProcessLike | undefined {
  return (globalThis as { process?: ProcessLike }).process;
}

/** Whether this is Deno (its own APIs are used then; `node:` ones elsewhere). */
export function onDeno(): boolean {
  return deno() !== undefined;
}

/** The operating system this process runs on. */
export function runtimeOs(): RuntimeOs {
  const os = deno()?.build.os ?? nodeProcess()?.platform;
  return (os === "win32" ? "windows" : os) as RuntimeOs;
}

// File URLs, as node:url's `fileURLToPath` and `pathToFileURL` make them, in own code: on Deno
// a static `node:` import loads the runtime's Node layer at start-up (module_graph_test.ts).

/** Whether paths are Windows paths here. */
function windowsPaths(): boolean {
  return runtimeOs() === "windows";
}

/**
 * The path of the `file:` URL `url`. Throws a `TypeError` for another scheme, a host off
 * Windows, an encoded separator (`%2F`, and `%5C` on Windows), or, on Windows, a path with
 * neither a drive nor a host.
 */
export function fileUrlToPath(url: URL, windows: boolean = windowsPaths()): string {
  const refuse = (why: string) => new TypeError(`Cannot make a path of ${url.href}: ${why}`);
  if (url.protocol !== "file:") throw refuse("not a file: URL");
  if (/%2f/i.test(url.pathname) || (windows && /%5c/i.test(url.pathname))) {
    throw refuse("it encodes a path separator");
  }
  if (!windows) {
    if (url.hostname !== "") throw refuse("a file: URL has no host here");
    return decodeURIComponent(url.pathname);
  }
  const path = decodeURIComponent(url.pathname.replaceAll("/", "\\"));
  if (url.hostname !== "") return `\\\\${url.hostname}${path}`;
  if (!/^\\[A-Za-z]:/.test(path)) throw refuse("the path is not absolute");
  return path.slice(1);
}

/**
 * The `file:` URL of the absolute path `path` (POSIX, or on Windows a drive or UNC path).
 * Throws a `TypeError` for a relative path.
 */
export function pathToFileUrl(path: string, windows: boolean = windowsPaths()): URL {
  const unc = windows && /^\\\\[^\\]/.test(path);
  if (!(windows ? unc || /^[A-Za-z]:[\\/]/.test(path) : path.startsWith("/"))) {
    throw new TypeError(`Cannot make a file: URL of the relative path ${JSON.stringify(path)}`);
  }
  let encoded = path.replaceAll("%", "%25");
  encoded = windows ? encoded.replaceAll("\\", "/") : encoded.replaceAll("\\", "%5C");
  encoded = encoded.replaceAll("\n", "%0A").replaceAll("\r", "%0D").replaceAll("\t", "%09");
  const url = new URL("file:///");
  if (unc) {
    const end = encoded.indexOf("/", 2);
    url.hostname = encoded.slice(2, end < 0 ? undefined : end);
    encoded = end < 0 ? "/" : encoded.slice(end);
  }
  // The setter encodes `?` and `#` too: they stay in the path.
  url.pathname = windows && !unc ? `/${encoded}` : encoded;
  return url;
}

/**
 * The longest delay a timer keeps (2^31 − 1 ms, about 24.8 days): runtimes fire a longer one at
 * once, with a warning.
 */
export const MAX_TIMER_DELAY: number = 2 ** 31 - 1;

/**
 * `ms` as a timer's delay, within 0 to {@linkcode MAX_TIMER_DELAY}: a longer wait (a peer's
 * `timeoutMs`, an option of months, `Infinity`) fires after that long instead of at once, and
 * whoever must wait longer checks again then (the channel's deadlines do).
 */
export function timerDelay(ms: number): number {
  return ms > MAX_TIMER_DELAY ? MAX_TIMER_DELAY : ms > 0 ? ms : 0;
}

/**
 * Runs `fire` at `at` (a `performance.now()` time), however far off that is: a timer waits at
 * most {@linkcode MAX_TIMER_DELAY}, so one that fires early waits again for the rest (a call's
 * deadline of months); at `Infinity`, never (and no timer is armed). Returns what cancels it.
 */
export function fireAt(at: number, fire: () => void): () => void {
  if (at === Infinity) return () => {};
  let timer: ReturnType<typeof setTimeout>;
  const wait = (): void => {
    const left = at - performance.now();
    if (left > 1) timer = setTimeout(wait, timerDelay(left));
    else fire();
  };
  timer = setTimeout(wait, timerDelay(at - performance.now()));
  return () => clearTimeout(timer);
}

/**
 * `promise`'s value (or its rejection), or `late` once `ms` have passed first; leaves no
 * timer either way.
 */
export async function within<T, L>(promise: Promise<T>, ms: number, late: L): Promise<T | L> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<L>((resolve) => timer = setTimeout(resolve, timerDelay(ms), late)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Cancels `timer`, if any, without touching the timer globals when there is none: their
 * first use loads Deno's Node-compatible timers, which a worker that sets no timer need not
 * pay before its first reply (`bench/ab_engine.ts` case `spawn`).
 */
export function clearTimer(timer: ReturnType<typeof setTimeout> | undefined): void {
  if (timer !== undefined) clearTimeout(timer);
}

/**
 * Makes `timer` (from `setTimeout` or `setInterval`) keep the process alive (`ref`) or not:
 * `Deno.refTimer`/`Deno.unrefTimer` on Deno, the handle's own `ref()`/`unref()` on Node and Bun.
 */
export function refTimer(timer: ReturnType<typeof setTimeout> | number, ref: boolean): void {
  const runtime = deno();
  if (runtime !== undefined) {
    if (ref) runtime.refTimer(timer as unknown as number);
    else runtime.unrefTimer(timer as unknown as number);
    return;
  }
  const handle = timer as unknown as TimerHandle;
  if (ref) handle.ref?.();
  else handle.unref?.();
}

/**
 * The environment variable `name`, or undefined when it is unset or, on Deno, when reading it
 * is not granted already (never prompts: a library must not ask for permissions on its own).
 */
export function envVar(name: string): string | undefined {
  const runtime = deno();
  if (runtime !== undefined) {
    const env = runtime.permissions.querySync?.({ name: "env", variable: name });
    return env?.state === "granted" ? runtime.env.get(name) : undefined;
  }
  return nodeProcess()?.env[name];
}

/** A synchronous writer to this process's stdout or stderr. */
export interface SyncWriter {
  /** Writes some of `bytes` and returns how many. */
  writeSync(bytes: Uint8Array): number;
}

/** This process's stdout (`1`) or stderr (`2`), written synchronously. */
export function outputSync(fd: 1 | 2): SyncWriter {
  const runtime = (globalThis as { Deno?: { stdout: SyncWriter; stderr: SyncWriter } }).Deno;
  if (runtime !== undefined) return fd === 1 ? runtime.stdout : runtime.stderr;
  const fs = nodeBuiltin<{ writeSync(fd: number, bytes: Uint8Array): number }>("node:fs");
  return { writeSync: (bytes) => fs.writeSync(fd, bytes) };
}

/**
 * Runs `listener` when this process exits normally (the end of the program, `Deno.exit()`,
 * `process.exit()`); the returned function removes it.
 */
export function onExit(listener: () => void): () => void {
  if (onDeno()) {
    globalThis.addEventListener("unload", listener);
    return () => globalThis.removeEventListener("unload", listener);
  }
  const process = nodeProcess() as unknown as {
    on(event: "exit", listener: () => void): void;
    off(event: "exit", listener: () => void): void;
  };
  process.on("exit", listener);
  return () => process.off("exit", listener);
}

/** The path of the program running this process (`Deno.execPath()`, `process.execPath`). */
export function execPath(): string {
  const runtime = (globalThis as { Deno?: { execPath(): string } }).Deno;
  if (runtime !== undefined) return runtime.execPath();
  return (nodeProcess() as unknown as { execPath: string }).execPath;
}

/** The kinds of connection failure {@linkcode connectionError} makes, with node:net's codes. */
const CONNECTION_CODES = { ConnectionRefused: "ECONNREFUSED", TimedOut: "ETIMEDOUT" } as const;

/**
 * The runtime's own error for a connection that was refused or timed out, as its sockets throw
 * it: `Deno.errors.ConnectionRefused` or `Deno.errors.TimedOut` on Deno; on Node and Bun an
 * `Error` whose `code` is node:net's (`"ECONNREFUSED"`, `"ETIMEDOUT"`).
 */
export function connectionError(
  kind: keyof typeof CONNECTION_CODES,
  message: string,
  options?: ErrorOptions,
): Error {
  if (onDeno()) return new Deno.errors[kind](message, options);
  return Object.assign(new Error(message, options), { code: CONNECTION_CODES[kind] });
}

/** The failures of a connection that went away, as Deno's error classes and node:net's codes. */
const GONE_CODES = {
  NotConnected: "ENOTCONN",
  ConnectionAborted: "ECONNABORTED",
  ConnectionReset: "ECONNRESET",
} as const;

/**
 * Whether `error` says the connection itself went away (reset, aborted, not connected), as a
 * socket's runtime throws it: `Deno.errors` classes on Deno, node:net's codes on Node and Bun.
 */
export function connectionGone(error: unknown): boolean {
  const errors = deno()?.errors;
  if (errors !== undefined) {
    return Object.keys(GONE_CODES).some((kind) => error instanceof errors[kind]);
  }
  const code = (error as { code?: unknown } | null)?.code;
  return Object.values(GONE_CODES).some((gone) => gone === code);
}

/** This process's id (`Deno.pid`, `process.pid`). */
export function processId(): number {
  return (deno() as { pid?: number } | undefined)?.pid ?? nodeProcess()!.pid;
}

/**
 * Whether this code runs in a worker thread: a Web Worker (its global scope has `postMessage`
 * and `close`, or, on Bun, whose workers have no `close`, `postMessage` off Bun's main thread),
 * or a thread of Node's `node:worker_threads`.
 */
export function inWorker(): boolean {
  const scope = globalThis as { postMessage?: unknown; close?: unknown };
  if (typeof scope.postMessage === "function") {
    if (typeof scope.close === "function") return true;
    return (globalThis as { Bun?: { isMainThread?: boolean } }).Bun?.isMainThread === false;
  }
  return !onDeno() &&
    nodeBuiltin<{ parentPort: unknown }>("node:worker_threads").parentPort != null;
}

/** The `workerData` this thread was started with (off Deno), else undefined. */
export function threadData(): unknown {
  return onDeno()
    ? undefined
    : nodeBuiltin<{ workerData: unknown }>("node:worker_threads").workerData;
}

/** The runtime running this process. */
export function runtimeName(): "deno" | "node" | "bun" {
  if (onDeno()) return "deno";
  return "Bun" in globalThis ? "bun" : "node";
}

/** A Node built-in module, off Deno, without an import (Node >= 22.3 and Bun have this). */
export function nodeBuiltin<T>(name: string): T {
  return (nodeProcess() as unknown as { getBuiltinModule(name: string): T })
    .getBuiltinModule(name);
}
