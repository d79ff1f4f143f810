// The side channel of the shared ring transport: a chunk larger than half the ring travels
// as a message on a MessagePort, its record in the ring (length negated) keeping its place in
// the byte order.

import { outgoing } from "../transfer.ts";

/** The MessagePort oversized chunks travel on, and those received and not yet read. */
export class OversizedPort {
  readonly #port: MessagePort;
  /** Chunks too large for the ring, in the order their records come. */
  readonly #chunks: Uint8Array[] = [];
  #waiter: (() => void) | undefined;

  /**
   * @param invalid Called, and the message dropped, when the peer breaks the rules: a chunk
   * in shared memory (which it could change under the reader) or one more than the single
   * chunk it may have unread (OVERSIZED_UNREAD).
   */
  constructor(port: MessagePort, invalid: (what: string) => void) {
    this.#port = port;
    port.onmessage = (event: MessageEvent) => {
      const data = event.data;
      if (!(data instanceof Uint8Array)) return;
      if (!(data.buffer instanceof ArrayBuffer)) return invalid("a chunk in shared memory");
      if (this.#chunks.length > 0) return invalid("a second chunk while one is unread");
      this.#chunks.push(data);
      this.wake();
    };
  }

  /** Posts `chunk`, transferred when it was given up with transfer(). */
  post(chunk: Uint8Array): void {
    const { message, transfer } = outgoing(chunk);
    this.#port.postMessage(message, transfer);
  }

  /** The next chunk received, if one came. */
  shift(): Uint8Array | undefined {
    return this.#chunks.shift();
  }

  /** Settles when a chunk arrives or `wake()` is called. */
  arrival(): Promise<void> {
    return new Promise<void>((resolve) => this.#waiter = resolve);
  }

  /** Ends the wait of `arrival()`, if any. */
  wake(): void {
    const wake = this.#waiter;
    this.#waiter = undefined;
    wake?.();
  }

  close(): void {
    this.#port.onmessage = null;
    this.#port.close();
    this.#chunks.length = 0;
  }
}
