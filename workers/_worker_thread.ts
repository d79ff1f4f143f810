// One thread worker: a module Web Worker, its channel, and how it ends. The worker is
// terminated as soon as its channel has closed, whichever way: close() (GOODBYE, drain), the
// worker closing itself, an uncaught error (the Worker's `error` event), kill(). Its status
// then reads as a process's would: code 1 after an uncaught error, SIGKILL after kill() or once
// this side ended its channel (close()'s `drainTimeout`, a heartbeat; not the worker's own
// GOODBYE), the code a Bun or Node thread gave `process.exit()`, code 0 otherwise.

import type { ChannelOptions } from "../channel/channel.ts";
import { ConnectionClosedError, HandshakeError } from "../channel/errors.ts";
import type { MethodName, RemoteArgs, RemoteOf } from "../channel/types.ts";
import { workerTransport } from "../transports/web_worker.ts";
import {
  causeChain,
  HeldWorker,
  KeepAlive,
  type WorkerChannel,
  workerChannel,
} from "./_worker_channel.ts";
import { withPermissionHint } from "./spawn_worker_options.ts";
import { threadWorkerData, threadWorkerName } from "./worker_env.ts";
import { WorkerExitedError } from "./errors.ts";
import { TransportClosedError } from "../errors.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import { processId } from "../_runtime.ts";
import { holdThread, startThread } from "../_thread.ts";

/** How a thread worker is started. */
export interface ThreadOptions {
  name: string;
  /** Its own permissions, or `undefined` to share this process's. */
  permissions: Deno.PermissionOptionsObject | undefined;
}

/** One thread worker: a module Web Worker and its channel. */
export class WorkerThread<Api extends object> extends HeldWorker implements WorkerHandle<Api> {
  readonly name: string;
  readonly stderrTail: readonly string[] = [];
  readonly exited: Promise<Deno.CommandStatus>;
  readonly #worker: Worker;
  readonly #terminated = Promise.withResolvers<void>();
  /** The channel to the worker and its remote, once opening. */
  #link: WorkerChannel<Api> | undefined;
  #ending = false;
  /** Set once close() was called: connection errors are then expected. */
  #closing = false;
  #killed = false;
  /** The uncaught error the worker died of, as its `error` event told it. */
  #thrown: string | undefined;
  /** The code the thread exited with by itself, where its Worker says (Bun, Node). */
  #exitCode: number | undefined;
  /** Why this side ended the worker, for WorkerExitedError. */
  #stopReason: string | undefined;
  /**
   * What a permission error gains on its way to the caller: the `permissions` to grant, for a
   * thread that has its own; nothing for one that has its process's, which no grant to the
   * thread can widen (Deno's message names the process's flag).
   */
  readonly #hint: (error: unknown) => unknown;
  protected readonly keepAlive: KeepAlive = new KeepAlive((hold) => {
    holdThread(this.#worker, hold && !this.#ending);
    if (hold) this.#link?.channel.ref();
    else this.#link?.channel.unref();
  });

  constructor(module: URL, options: ThreadOptions) {
    super();
    this.name = options.name;
    const { permissions } = options;
    this.#hint = permissions === undefined ? (error) => error : withPermissionHint;
    this.#worker = startThread(module, {
      name: threadWorkerName(options.name),
      permissions,
      workerData: threadWorkerData(options.name),
    });
    this.#worker.addEventListener("error", (event) => this.#thrown ??= event.message);
    this.#worker.addEventListener("close", (event) => {
      if (!this.#ending) this.#exitCode ??= (event as Event & { code?: number }).code;
    });
    this.exited = this.#terminated.promise.then(async () => {
      await this.#link?.channel.closed.catch((error: Error) => this.#cutShort(error));
      return this.#status();
    });
  }

  get pid(): number {
    return processId();
  }

  get thread(): true {
    return true;
  }

  get remote(): RemoteOf<Api> {
    return this.#link!.remote;
  }

  /** Opens the channel; on failure ends the worker and throws why. */
  async open(options: ChannelOptions): Promise<WorkerHandle<Api>> {
    this.#link = workerChannel<Api>(workerTransport(this.#worker), options, {
      keepAlive: this.keepAlive,
      translate: (error) => this.#translate(error),
    });
    const channel = this.#link.channel;
    const end = () => void this.#end();
    channel.closed.then(end, end);
    try {
      await channel.opened;
    } catch (error) {
      throw await this.#failStart(error);
    }
    return this;
  }

  notify<K extends MethodName<Api>>(method: K, param: RemoteArgs<Api[K]>[0]): void {
    this.#link!.channel.notify(method, param);
  }

  async close(): Promise<Deno.CommandStatus> {
    this.#closing = true;
    await this.#link?.channel.close();
    return await this.#end();
  }

  kill(): Promise<Deno.CommandStatus> {
    if (!this.#ending) {
      this.#killed = true;
      this.#stopReason ??= "kill() was called";
    }
    return this.#end();
  }

  /** Terminates the worker (once); its transport, if still open, fails its calls. */
  #end(): Promise<Deno.CommandStatus> {
    if (!this.#ending) {
      this.#ending = true;
      // The instance's terminate: the transport watches it to fail at once.
      this.#worker.terminate();
      // Deno's terminate() does not stop a thread busy in a synchronous loop: one conduit has
      // ended must not hold the program open (threads_hostile_test.ts).
      holdThread(this.#worker, false);
      this.#terminated.resolve();
    }
    return this.exited;
  }

  /** The worker did not start: end it and say why. */
  async #failStart(error: unknown): Promise<unknown> {
    this.#closing = true;
    const status = await this.#end();
    if (this.#thrown === undefined) {
      if (error instanceof HandshakeError && error.code === "handshake_timeout") {
        // Unlike a process, a Web Worker that loaded and did not serve lives on, silent; and
        // one that ends itself (Deno.exit) before serveWorker runs ends without a word.
        return new HandshakeError(
          error.code,
          `${error.message}: thread worker ${this.name} loaded but did not answer; did the ` +
            "module call serveWorker(), without ending itself (Deno.exit) before?",
          { cause: error },
        );
      }
      // Another codec or protocol version.
      if (error instanceof HandshakeError && error.code !== "closed") return error;
      if (!(error instanceof ConnectionClosedError)) return error;
    }
    return this.#exitError(status, error, true);
  }

  /** Turns a connection error into WorkerExitedError, ending the worker if it lives. */
  async #translate(error: unknown): Promise<unknown> {
    if (!(error instanceof ConnectionClosedError)) return this.#hint(error);
    if (error instanceof WorkerExitedError) return error;
    // A connection that failed while the worker lives (heartbeat, protocol error) ends it.
    if (!this.#closing && !this.#ending) this.#stopReason ??= innermostMessage(error);
    return this.#exitError(await this.#end(), error);
  }

  /**
   * This side ended a channel that failed (close()'s `drainTimeout`, a heartbeat, a protocol
   * error, a failed start): unless the worker went by itself (its transport says so, or its
   * GOODBYE with a code ended the channel), terminating it killed it.
   */
  #cutShort(failure: Error): void {
    if (failure.cause instanceof TransportClosedError) return;
    if (this.#thrown !== undefined || this.#exitCode !== undefined) return;
    if (failure instanceof ConnectionClosedError && failure.goodbye !== undefined) {
      this.#stopReason ??= innermostMessage(failure);
      return;
    }
    this.#killed = true;
    this.#stopReason ??= failure.message;
  }

  #status(): Deno.CommandStatus {
    if (this.#killed) return { success: false, code: 137, signal: "SIGKILL" };
    if (this.#thrown !== undefined) return { success: false, code: 1, signal: null };
    const code = this.#exitCode ?? 0;
    return { success: code === 0, code, signal: null };
  }

  #exitError(status: Deno.CommandStatus, cause: unknown, beforeServing = false) {
    const thrown = this.#thrown === undefined ? undefined : `it threw: ${this.#thrown}`;
    return new WorkerExitedError({
      worker: this.name,
      pid: this.pid,
      thread: true,
      code: status.code,
      signal: status.signal,
      reason: thrown ?? this.#stopReason,
      beforeServing,
    }, { cause });
  }
}

/** The message of the error at the end of `error`'s cause chain: what first went wrong. */
function innermostMessage(error: Error): string {
  return [...causeChain(error)].at(-1)!.message;
}
