// A Deno.Listener as a Listener of Transports.

import { TransportClosedError } from "../errors.ts";
import type { Listener, Transport } from "./types.ts";

/** Turns each accepted connection into a Transport; runs `onClose` once the listener closed. */
export class ConnListener<C extends Deno.Conn> implements Listener {
  readonly addr: Deno.Addr;
  readonly #listener: Deno.Listener<C>;
  readonly #wrap: (conn: C) => Transport;
  readonly #onClose: (() => Promise<void>) | undefined;
  readonly #accepting = new Set<Promise<C>>();
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

  async accept(): Promise<Transport> {
    if (this.#closing !== undefined) throw new TransportClosedError("The listener is closed");
    const accepting = this.#listener.accept();
    this.#accepting.add(accepting);
    let conn: C;
    try {
      conn = await accepting;
    } catch (cause) {
      if (this.#closing !== undefined) {
        throw new TransportClosedError("The listener is closed", { cause });
      }
      throw cause;
    } finally {
      this.#accepting.delete(accepting);
    }
    if (this.#closing !== undefined) {
      conn.close();
      throw new TransportClosedError("The listener is closed");
    }
    return this.#wrap(conn);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Transport> {
    while (this.#closing === undefined) {
      let transport: Transport;
      try {
        transport = await this.accept();
      } catch (error) {
        if (this.#closing !== undefined) return;
        throw error;
      }
      yield transport;
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
    // Let pending accepts settle, so no op outlives the listener.
    await Promise.all([...this.#accepting].map((accepting) => accepting.catch(() => {})));
    await this.#onClose?.();
  }
}
