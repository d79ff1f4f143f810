/**
 * The worker's side: {@linkcode serveWorker} serves a handler object to the parent that
 * spawned this process with `spawnWorker`, over stdin/stdout (or the Unix socket the parent
 * names), and exits when the parent says goodbye or goes away.
 *
 * A worker module imports it from here, `@conduit/ipc/workers/serve`: this entrypoint loads
 * only the worker's side, at once, so the worker starts faster than with `@conduit/ipc/workers`
 * or `@conduit/ipc`, which load the parent's side (`spawnWorker`, `WorkerPool`) and export a
 * `serveWorker` that loads this module when it is called (`bench/ab_engine.ts` case `spawn`
 * measures a worker's start-up).
 *
 * @example A worker module
 * ```ts ignore
 * // hash_worker.ts
 * import { serveWorker } from "@conduit/ipc/workers/serve";
 *
 * const handlers = {
 *   async sha256(text: string): Promise<string> {
 *     const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
 *     return Array.from(new Uint8Array(digest), (b) => b.toString(16).padStart(2, "0")).join("");
 *   },
 * };
 * export type HashApi = typeof handlers;
 *
 * if (import.meta.main) await serveWorker(handlers);
 * ```
 *
 * @module
 */

import { Channel, type ChannelOptions, untilOpen } from "../channel/channel.ts";
import { connectUnix } from "../transports/unix.ts";
import type { CheckedHandlers } from "../channel/types.ts";
import type { Codec } from "../codecs/types.ts";
import {
  consoleToStderr,
  DEFAULT_WORKER_CALL_TIMEOUT,
  DEFAULT_WORKER_TRUST_PEER,
  inThreadWorker,
  nodeQuietStdout,
  WORKER_ENV,
  WORKER_SOCKET_ENV,
} from "./worker_env.ts";
import { ConnectionClosedError } from "../channel/errors.ts";
import { ConduitError } from "../errors.ts";
import { envVar, onDeno } from "../_runtime.ts";
import { REAL_STDOUT_KEY } from "../transports/_byte_channel_transport.ts";
import { structuredCodec } from "../codecs/structured.ts";
import type { Transport } from "../transports/types.ts";

export { DEFAULT_WORKER_CALL_TIMEOUT, DEFAULT_WORKER_TRUST_PEER, WORKER_ENV, WORKER_SOCKET_ENV };
// The channel types this API shows, so that this entrypoint's documentation is complete.
export type * from "../channel/_shown_types.ts";

/** Options for {@linkcode serveWorker}: the channel's options, with worker defaults. */
export interface ServeWorkerOptions extends Omit<ChannelOptions, "codec" | "handlers"> {
  /**
   * The channel codec; the parent must use one of the same `name` (`spawnWorker` uses the
   * structured codec for a module too).
   *
   * @default {structuredCodec()}
   */
  codec?: Codec<unknown>;
  /**
   * The deadline of a call to the parent that sets no `timeout`, in milliseconds.
   *
   * @default {DEFAULT_WORKER_CALL_TIMEOUT} (Infinity: none)
   */
  defaultTimeout?: number;
  /**
   * How long to wait for the parent's HELLO, in milliseconds. The parent sends it as it
   * spawns us, or is gone (then stdin ends), and times out its own side of the handshake.
   *
   * @default {Infinity}
   */
  handshakeTimeout?: number;
  /**
   * Exit the process (`Deno.exit`; `process.exit` on Node and Bun) once the channel has
   * closed: with code 0 after the parent's goodbye, 1 when the connection was lost (the
   * parent died, the stdin pipe closed). With `false` the promise of
   * {@linkcode serveWorker} still resolves once the channel is open, and the console is
   * restored once it closes.
   *
   * @default {true}
   */
  exit?: boolean;
  /**
   * Whether errors sent to the parent include stack traces.
   *
   * @default {DEFAULT_WORKER_TRUST_PEER} (true)
   */
  trustPeer?: boolean;
}

/**
 * Serves `handlers` to the parent process that spawned this one with `spawnWorker`.
 *
 * In a Web Worker that `spawnWorker(…, { thread: true })` started, it serves over the
 * worker's `self` instead, leaves the console alone, and ends the thread (`self.close()`)
 * where a process would exit.
 *
 * `console.log`, `info`, `debug`, `dir`, `table`, `count` and `time*` print to stderr, which
 * the parent forwards line by line, so a stray log cannot corrupt the frames on stdout: from
 * before the module loads when `spawnWorker` started it (it also points `Deno.stdout` at
 * stderr then), otherwise from this call on. Writes that reach fd 1 anyway (`node:process`'s
 * `process.stdout`, a subprocess inheriting stdout) break the channel, and the parent's error
 * quotes them. On Node and Bun (a worker module run by `node` or `bun`, see
 * docs/runtimes.md) `process.stdout` is pointed at stderr too, before the module loads when
 * the parent ran the preload (`nodeQuietStdout` in worker_env.ts), otherwise from this call
 * on, and stays there. Handlers receive a `CallContext` whose `channel` calls back into the
 * parent.
 * The process exits when the parent says goodbye (`close()`), or when its stdin reaches its
 * end: the parent exited. (On Linux `spawnWorker` also has the kernel kill the worker when
 * the parent dies, even while the worker is busy.)
 *
 * @typeParam Parent The handler interface the parent serves (for `channel.remote`).
 * @typeParam Handlers The handler object (inferred); a handler that takes more than one
 * param besides its `CallContext` is a compile-time error naming it.
 * @param handlers The methods the parent can call; see `ChannelOptions.handlers`.
 * @param options The codec, limits and exit behaviour; see {@linkcode ServeWorkerOptions}.
 * @returns The open channel to the parent, once the handshake has succeeded.
 * @throws {HandshakeError} When the parent speaks another codec or protocol version.
 * @throws {ConduitError} When `spawnWorker` did not start this process (see
 * {@linkcode WORKER_ENV}) or this thread: a parent that imported a value from its worker module does not
 * start serving in its own process. Also on a call after one that connected, or is
 * connecting: the parent has one channel. A call that could not connect may be retried.
 *
 * @example A worker that calls back into its parent, driven from here
 * ```ts
 * import { spawnWorker } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 * // The worker module (examples/_echo_worker.ts) ends with:
 * //   if (import.meta.main) await serveWorker(handlers);
 * // and its `callParent` handler calls `ctx.channel.remote.double(x)`.
 * import type { EchoApi } from "../examples/_echo_worker.ts";
 *
 * const url = new URL("../examples/_echo_worker.ts", import.meta.url);
 * await using worker = await spawnWorker<EchoApi>(url, {
 *   handlers: { double: (x: number) => 2 * x },
 * });
 * assert.equal(await worker.remote.callParent(21), 42);
 * ```
 */
export async function serveWorker<
  Parent extends object = Record<string, never>,
  Handlers extends object = object,
>(
  handlers: Handlers & CheckedHandlers<Handlers>,
  options: ServeWorkerOptions = {},
): Promise<Channel<Parent>> {
  return await serve<Parent>(handlers, options);
}

// The worker's side of serveWorker (serve_worker.ts). A parent never loads it: the
// `serveWorker` of `@conduit/ipc` and `@conduit/ipc/workers` loads serve_worker.ts when it is
// called (serve_worker_lazy.ts). The thread transport is loaded only when used.
/** serveWorker's options, as serve_worker.ts documents them. */
interface ServeOptions extends Omit<ChannelOptions, "codec" | "handlers"> {
  codec?: Codec<unknown>;
  exit?: boolean;
}

/** Whether serveWorker connected (or is connecting) to the parent, which has one channel to it. */
let served = false;

/** serveWorker itself; see serve_worker.ts. */
async function serve<Parent extends object>(
  handlers: object,
  options: ServeOptions = {},
): Promise<Channel<Parent>> {
  const thread = inThreadWorker();
  if (!thread && !startedAsWorker()) {
    throw new ConduitError(
      "serveWorker() was called in a process that spawnWorker did not start (the variable " +
        `${WORKER_ENV} is not set): not serving. A parent must not import values from a ` +
        'worker module: import only its type (`import type { Api } from "./worker.ts"`), ' +
        "or guard the call with `if (import.meta.main)`",
    );
  }
  if (served) {
    throw new ConduitError(
      "serveWorker() was called again: a worker serves its parent one channel, from its first call",
    );
  }
  served = true;
  const { exit = true, codec = structuredCodec(), ...channelOptions } = options;
  // A thread's console is its process's, whose stdout carries no channel. On Node and Bun,
  // `process.stdout` moves to stderr too, unless a preload did it before the module ran.
  if (!thread) nodeQuietStdout(REAL_STDOUT_KEY);
  const restoreConsole = thread ? exitClosesThread() : consoleToStderr();
  const socketPath = thread ? undefined : workerSocketPath();
  let transport: Transport | undefined;
  let channel: Channel<Parent>;
  try {
    // The thread and stdio transports load only when used. The Unix socket, a process worker's
    // default, is imported statically: a second module load after the first would delay the
    // first reply.
    transport = thread
      ? (await import("../transports/web_worker.ts")).selfTransport()
      : socketPath === undefined
      ? (await import("../transports/stdio_child.ts")).stdioTransport()
      : await connectUnix(socketPath);
    channel = new Channel<Parent>(transport, {
      trustPeer: DEFAULT_WORKER_TRUST_PEER,
      ...channelOptions,
      defaultTimeout: channelOptions.defaultTimeout ?? DEFAULT_WORKER_CALL_TIMEOUT,
      handshakeTimeout: channelOptions.handshakeTimeout ?? Infinity,
      codec,
      handlers,
    });
  } catch (error) {
    // No channel was made (no connection, or options refused): a connection made is let go, so
    // the parent is not left waiting (over stdio it waits still: Deno keeps a process's stdin
    // and stdout open until it exits), and a retry may make the one.
    served = false;
    restoreConsole();
    await transport?.close().catch(() => {});
    throw error;
  }
  // Over a socket, stdin carries nothing but still tells us when the parent is gone.
  const stdinWatch = socketPath === undefined
    ? undefined
    : onDeno()
    ? watchStdin(channel)
    : (await import("../transports/_node_stdio.ts")).watchNodeStdin(() =>
      channel.abort(new ConnectionClosedError("The parent closed the worker's stdin"))
    );
  const finish = (code: number) => {
    restoreConsole();
    if (exit) thread ? closeThread() : exitProcess(code);
    stdinWatch?.stop();
  };
  channel.closed.then(() => finish(0), () => finish(1));
  return await untilOpen(channel);
}

/**
 * Ends this thread worker; `self.close()` stops it from the inside once its turn is over. A
 * Bun worker has no `self.close()` (once its transport is released): `process.exit()` ends
 * its thread.
 */
function closeThread(): void {
  const close = (globalThis as { close?: () => void }).close;
  if (typeof close === "function") close();
  else exitProcess(0);
}

/**
 * Makes `Deno.exit()` in this thread worker a `self.close()`, which its transport tells the
 * parent of: Deno ends a worker that calls `Deno.exit()` without a word to its parent, whose
 * calls would wait forever. Returns the undo.
 */
function exitClosesThread(): () => void {
  // Off Deno, `process.exit()` in a worker ends the thread, and its Worker tells the parent.
  if (!onDeno()) return () => {};
  const exit = Deno.exit;
  Deno.exit = closeThread as typeof Deno.exit;
  return () => {
    Deno.exit = exit;
  };
}

/** Whether spawnWorker started this process (see WORKER_ENV). */
function startedAsWorker(): boolean {
  return envVar(WORKER_ENV) === "1";
}

/** The socket the parent asked us to connect to, if it did and we may read the variable. */
function workerSocketPath(): string | undefined {
  return envVar(WORKER_SOCKET_ENV) || undefined;
}

/** Exits this process: `Deno.exit` on Deno, `process.exit` on Node and Bun. */
function exitProcess(code: number): void {
  if (onDeno()) Deno.exit(code);
  (globalThis as unknown as { process: { exit(code: number): never } }).process.exit(code);
}

/** Aborts `channel` once stdin ends (the parent exited); `stop()` stops watching. */
function watchStdin(channel: { abort(reason: unknown): Promise<void> }): { stop(): void } {
  let stopped = false;
  const buffer = new Uint8Array(256);
  (async () => {
    try {
      while (await Deno.stdin.read(buffer) !== null) {
        // The parent writes nothing here: only the end of the pipe matters.
      }
    } catch {
      // stdin was closed under us (stop()) or failed: either way the parent is unreachable.
    }
    if (!stopped) {
      await channel.abort(new ConnectionClosedError("The parent closed the worker's stdin"));
    }
  })();
  return {
    stop() {
      stopped = true;
      try {
        Deno.stdin.close();
      } catch {
        // Closed already.
      }
    },
  };
}
