// The worker's side of serveWorker (serve_worker.ts). A parent never loads it: the
// `serveWorker` of `@conduit/ipc` and `@conduit/ipc/workers` loads serve_worker.ts when it is
// called (serve_worker_lazy.ts). The socket and thread transports are loaded only when used.

import { Channel, type ChannelOptions, untilOpen } from "../channel/channel.ts";
import { ConnectionClosedError } from "../channel/errors.ts";
import { ConduitError } from "../errors.ts";
import { structuredCodec } from "../codecs/structured.ts";
import type { Codec } from "../codecs/types.ts";
import { stdioTransport } from "../transports/stdio_child.ts";
import type { Transport } from "../transports/types.ts";
import { consoleToStderr } from "./_console_to_stderr.ts";
import { inThreadWorker } from "./_thread_name.ts";
import {
  DEFAULT_WORKER_CALL_TIMEOUT,
  DEFAULT_WORKER_TRUST_PEER,
  WORKER_ENV,
  WORKER_SOCKET_ENV,
} from "./worker_env.ts";

/** serveWorker's options, as serve_worker.ts documents them. */
export interface ServeOptions extends Omit<ChannelOptions, "codec" | "handlers"> {
  codec?: Codec<unknown>;
  exit?: boolean;
}

/** serveWorker itself; see serve_worker.ts. */
export async function serve<Parent extends object>(
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
  const { exit = true, codec = structuredCodec(), ...channelOptions } = options;
  // A thread's console is its process's, whose stdout carries no channel.
  const restoreConsole = thread ? exitClosesThread() : consoleToStderr();
  const socketPath = thread ? undefined : workerSocketPath();
  let transport: Transport;
  try {
    // The socket and thread transports are loaded only when used: a worker starts faster.
    transport = thread
      ? (await import("../transports/web_worker.ts")).selfTransport()
      : socketPath === undefined
      ? stdioTransport()
      : await (await import("../transports/unix.ts")).connectUnix(socketPath);
  } catch (error) {
    restoreConsole();
    throw error;
  }
  const channel = new Channel<Parent>(transport, {
    trustPeer: DEFAULT_WORKER_TRUST_PEER,
    ...channelOptions,
    defaultTimeout: channelOptions.defaultTimeout ?? DEFAULT_WORKER_CALL_TIMEOUT,
    handshakeTimeout: channelOptions.handshakeTimeout ?? Infinity,
    codec,
    handlers,
  });
  // Over a socket, stdin carries nothing but still tells us when the parent is gone.
  const stdinWatch = socketPath === undefined ? undefined : watchStdin(channel);
  const finish = (code: number) => {
    restoreConsole();
    if (exit) thread ? closeThread() : Deno.exit(code);
    stdinWatch?.stop();
  };
  channel.closed.then(() => finish(0), () => finish(1));
  return await untilOpen(channel);
}

/** Ends this thread worker; `self.close()` stops it from the inside once its turn is over. */
function closeThread(): void {
  (globalThis as unknown as { close(): void }).close();
}

/**
 * Makes `Deno.exit()` in this thread worker a `self.close()`, which its transport tells the
 * parent of: Deno ends a worker that calls `Deno.exit()` without a word to its parent, whose
 * calls would wait forever. Returns the undo.
 */
function exitClosesThread(): () => void {
  const exit = Deno.exit;
  Deno.exit = closeThread as typeof Deno.exit;
  return () => {
    Deno.exit = exit;
  };
}

/** Whether spawnWorker started this process (see WORKER_ENV). */
function startedAsWorker(): boolean {
  const state = Deno.permissions.querySync({ name: "env", variable: WORKER_ENV }).state;
  return state === "granted" && Deno.env.get(WORKER_ENV) === "1";
}

/** The socket the parent asked us to connect to, if it did and we may read the variable. */
function workerSocketPath(): string | undefined {
  const state = Deno.permissions.querySync({ name: "env", variable: WORKER_SOCKET_ENV }).state;
  if (state !== "granted") return undefined;
  return Deno.env.get(WORKER_SOCKET_ENV) || undefined;
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
