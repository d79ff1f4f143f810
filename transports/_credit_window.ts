// A credit window: how far one end may write ahead of what its peer has read, for transports
// whose medium has no backpressure of its own (NATS subjects, postMessage). The sender spends
// credit as it sends and waits once none is left; the receiver counts what arrives and what
// is read, and grants more once a quarter of the window was read since its last grant. Both
// count totals since the start, so a grant is a total the sender can compare with its own.
// The NATS transport sends grants as those totals, the Web Worker transport as the bytes read
// since the last grant; both use these two classes.

/** The sending side of a credit window: what may still be sent, and a wait for more. */
export class SendCredit {
  #sent = 0;
  #limit: number;
  #waiter: PromiseWithResolvers<void> | undefined;

  /** @param limit The bytes the peer allows before it grants more (its window). */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** The bytes that may be sent now (0 or less: a writer waits). */
  get available(): number {
    return this.#limit - this.#sent;
  }

  /** Counts `bytes` as sent. */
  spend(bytes: number): void {
    this.#sent += bytes;
  }

  /** The peer allows `total` bytes in all (a Credit message); wakes a waiting writer. */
  grant(total: number): void {
    if (total <= this.#limit) return;
    this.#limit = total;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.resolve();
  }

  /** The peer read `bytes` more: it allows as many more. */
  grantMore(bytes: number): void {
    this.grant(this.#limit + bytes);
  }

  /** Resolves once some bytes may be sent; rejects with what `fail()` was given. */
  async wait(): Promise<void> {
    while (this.available <= 0) {
      this.#waiter = Promise.withResolvers();
      await this.#waiter.promise;
    }
  }

  /** Fails a waiting writer with `error`. */
  fail(error: Error): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.reject(error);
  }
}

/** The receiving side: checks that the peer keeps to the window, and says when to grant more. */
export class ReceiveCredit {
  readonly #window: number;
  #received = 0;
  #consumed = 0;
  #granted: number;

  /** @param window The bytes the peer may send ahead of this end's reads. */
  constructor(window: number) {
    this.#window = window;
    this.#granted = window;
  }

  /** The total granted so far, the window included. */
  get granted(): number {
    return this.#granted;
  }

  /**
   * Counts `bytes` in; returns a message when that goes past what was granted, or, given
   * `begunWithin`, when the message began more than that many bytes past it (a sender that may
   * begin a message while it has credit left, and send it whole).
   */
  receive(bytes: number, begunWithin?: number): string | undefined {
    const total = this.#received + bytes;
    const over = begunWithin === undefined
      ? total > this.#granted
      : this.#received > this.#granted + begunWithin;
    if (over) return `${total} > ${this.#granted} bytes`;
    this.#received = total;
    return undefined;
  }

  /**
   * Counts `bytes` as read (less than 0: given back unread); returns the new total to grant
   * once a quarter of the window has been read since the last grant (few grants, and the
   * writer never stalls on a reader that keeps up), else `undefined`.
   */
  consume(bytes: number): number | undefined {
    this.#consumed += bytes;
    if (this.#consumed + this.#window - this.#granted < this.#window / 4) return undefined;
    return this.#granted = this.#consumed + this.#window;
  }
}
