// The channel's view of a worker's connection: its stdio, or the Unix socket it connected to.
// Closing or aborting it also stops the process gracefully (`exitTimeout`, SIGTERM,
// `killTimeout`, SIGKILL) instead of the stdio transport's own timeout.

import type { ChildTransport } from "../transports/stdio_parent.ts";
import type { Transport } from "../transports/types.ts";

/** What the transport needs from the worker process. */
export interface ProcessControl {
  /** The process's stdin/stdout. */
  readonly stdio: ChildTransport;
  /** Waits for the process to exit, signalling it after the timeouts. */
  stop(): Promise<void>;
}

/** A worker's connection (its stdio or a socket) that stops the process when it closes. */
export class ProcessTransport implements Transport {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  readonly #connection: Transport;
  readonly #process: ProcessControl;

  constructor(connection: Transport, process: ProcessControl) {
    this.readable = connection.readable;
    this.writable = connection.writable;
    this.#connection = connection;
    this.#process = process;
  }

  async close(): Promise<void> {
    await this.#closeSocket((socket) => socket.close());
    // The channel has closed the worker's stdin by now: the worker will exit.
    await this.#process.stop();
    await this.#process.stdio.close();
  }

  async abort(reason?: unknown): Promise<void> {
    await this.#closeSocket((socket) => socket.abort(reason));
    // The channel aborts when the worker's output ended (it is exiting: let it report its
    // own exit code) or when it failed the worker; a worker that lives on is stopped.
    await this.#process.stop();
    await this.#process.stdio.abort(reason);
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** Over a socket: ends it, then closes the worker's stdin, its other lifeline. */
  async #closeSocket(end: (socket: Transport) => Promise<void>): Promise<void> {
    const stdio = this.#process.stdio;
    if (this.#connection === stdio) return;
    await end(this.#connection);
    await stdio.writable.close().catch(() => {});
  }
}
