// What every Listener shares: iteration until closed, an idempotent close() and disposal.

import type { Listener, Transport } from "./types.ts";

/** A Listener whose subclass supplies `accept()` and the release behind `close()`. */
export abstract class ListenerBase implements Listener {
  abstract readonly addr: Deno.Addr;
  #closing: Promise<void> | undefined;

  abstract accept(): Promise<Transport>;

  /** Stops accepting and releases what the listener holds; called once, by `close()`. */
  protected abstract release(): Promise<void>;

  /** Whether `close()` has been called. */
  protected get closing(): boolean {
    return this.#closing !== undefined;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Transport> {
    while (!this.closing) {
      let transport: Transport;
      try {
        transport = await this.accept();
      } catch (error) {
        // An accept the close ended ends the iteration; any other failure is the caller's.
        if (this.closing) return;
        throw error;
      }
      yield transport;
    }
  }

  close(): Promise<void> {
    return this.#closing ??= this.release();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}
