// A Deno.Listener as a Listener of Transports.

import type { Listener, Transport } from "./types.ts";

/** Turns each accepted connection into a Transport; runs `onClose` once the listener closed. */
export class ConnListener<C extends Deno.Conn> implements Listener {
  readonly addr: Deno.Addr;
  readonly #listener: Deno.Listener<C>;
  readonly #wrap: (conn: C) => Transport;
  readonly #onClose: (() => Promise<void>) | undefined;
  #accepting: Promise<C> | undefined;
  #closing: Promise<void> | undefined;

  constructor(
    listener: Deno.Listener<C>,
    wrap: (conn: C) => Transport,
    options: { addr?: Deno.Addr; onClose?: () => Promise<void> } = {},
  ) {
    this.#listener = listener;
    this.#wrap = wrap;
    this.addr = options.addr ?? listener.addr;
    this.#onClose = options.onClose;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Transport> {
    while (this.#closing === undefined) {
      let conn: C;
      try {
        conn = await (this.#accepting = this.#listener.accept());
      } catch (error) {
        if (this.#closing !== undefined) return;
        throw error;
      } finally {
        this.#accepting = undefined;
      }
      if (this.#closing !== undefined) {
        conn.close();
        return;
      }
      yield this.#wrap(conn);
    }
  }

  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  async #close(): Promise<void> {
    try {
      this.#listener.close();
    } catch {
      // Closed already.
    }
    // Let a pending accept settle, so no op outlives the listener.
    await this.#accepting?.catch(() => {});
    await this.#onClose?.();
  }
}
