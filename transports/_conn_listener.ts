// A Deno.Listener as a Listener of Transports.

import { TransportClosedError } from "../errors.ts";
import type { Transport } from "./types.ts";
import { ListenerBase } from "./_listener_base.ts";

/** Turns each accepted connection into a Transport; runs `onClose` once the listener closed. */
export class ConnListener<C extends Deno.Conn> extends ListenerBase {
  readonly addr: Deno.Addr;
  readonly encryption: "none" | "tls" | undefined;
  readonly #listener: Deno.Listener<C>;
  readonly #wrap: (conn: C) => Transport;
  readonly #onClose: (() => Promise<void>) | undefined;
  readonly #accepting = new Set<Promise<C>>();

  constructor(
    listener: Deno.Listener<C>,
    wrap: (conn: C) => Transport,
    options: {
      addr?: Deno.Addr;
      encryption?: "none" | "tls";
      onClose?: () => Promise<void>;
    } = {},
  ) {
    super();
    this.#listener = listener;
    this.#wrap = wrap;
    this.addr = options.addr ?? listener.addr;
    this.encryption = options.encryption;
    this.#onClose = options.onClose;
  }

  async accept(): Promise<Transport> {
    if (this.closing) throw new TransportClosedError("The listener is closed");
    const accepting = this.#listener.accept();
    this.#accepting.add(accepting);
    let conn: C;
    try {
      conn = await accepting;
    } catch (cause) {
      if (this.closing) {
        throw new TransportClosedError("The listener is closed", { cause });
      }
      throw cause;
    } finally {
      this.#accepting.delete(accepting);
    }
    if (this.closing) {
      conn.close();
      throw new TransportClosedError("The listener is closed");
    }
    return this.#wrap(conn);
  }

  protected override async release(): Promise<void> {
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
