// The flow control and liveness of one NATS connection's end: the credit it may still spend
// sending, the credit it grants its peer, and the heartbeat. Pure bookkeeping, no NATS.

/** The sending side of a credit window: what may still be sent, and a wait for more. */
export class SendCredit {
  #sent = 0;
  #limit: number;
  #waiter: PromiseWithResolvers<void> | undefined;

  /** @param limit The bytes the peer allows before it grants more (its window). */
  constructor(limit: number) {
    this.#limit = limit;
  }

  /** The bytes that may be sent now. */
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

  /** Counts `bytes` in; returns a message when that goes past what was granted. */
  receive(bytes: number): string | undefined {
    const total = this.#received + bytes;
    if (total > this.#granted) return `${total} > ${this.#granted} bytes`;
    this.#received = total;
    return undefined;
  }

  /**
   * Counts `bytes` as read; returns the new total to grant once a quarter of the window has
   * been read since the last grant (few Credit messages, and the writer never stalls on a
   * reader that keeps up), else `undefined`.
   */
  consume(bytes: number): number | undefined {
    this.#consumed += bytes;
    if (this.#consumed + this.#window - this.#granted < this.#window / 4) return undefined;
    return this.#granted = this.#consumed + this.#window;
  }
}

/** What a {@linkcode Heartbeat} does on its ticks. */
export interface HeartbeatEvents {
  /** Nothing was sent during the last interval: show the peer we are alive. */
  ping(): void;
  /** Nothing came from the peer for `silentMs`. */
  gone(silentMs: number): void;
}

/**
 * A connection's heartbeat. Silence is counted in this end's own ticks, not in wall time, so
 * that one late tick after a stall of this process's event loop does not make a live peer
 * look gone.
 */
export class Heartbeat {
  readonly #intervalMs: number;
  readonly #maxSilentTicks: number;
  readonly #events: HeartbeatEvents;
  readonly #timer: ReturnType<typeof setInterval>;
  #silentTicks = 0;
  #heard = false;
  #sent = false;

  /**
   * Starts ticking every `intervalMs`; the peer is gone after `silentMs` of silence.
   */
  constructor(intervalMs: number, silentMs: number, events: HeartbeatEvents) {
    this.#intervalMs = intervalMs;
    this.#maxSilentTicks = Math.ceil(silentMs / intervalMs) + 1;
    this.#events = events;
    this.#timer = setInterval(this.#tick, intervalMs);
  }

  /** Something came from the peer. */
  heard(): void {
    this.#heard = true;
  }

  /** Something went to the peer. */
  sent(): void {
    this.#sent = true;
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  readonly #tick = (): void => {
    this.#silentTicks = this.#heard ? 0 : this.#silentTicks + 1;
    this.#heard = false;
    if (this.#silentTicks >= this.#maxSilentTicks) {
      this.stop();
      return this.#events.gone(this.#silentTicks * this.#intervalMs);
    }
    if (!this.#sent) this.#events.ping();
    this.#sent = false;
  };
}

/**
 * The chunks received and not yet read, and the one pending read: a read takes the next chunk,
 * or waits for one, for the end (`null`) or for a failure. Chunks queued before an end or a
 * failure are still read first: they arrived in order.
 */
export class ChunkQueue {
  readonly #chunks: Uint8Array[] = [];
  readonly #onTake: (chunk: Uint8Array) => void;
  #reader: PromiseWithResolvers<Uint8Array | null> | undefined;
  #ended = false;
  #error: Error | undefined;

  /** @param onTake Called with each chunk as a read takes it. */
  constructor(onTake: (chunk: Uint8Array) => void) {
    this.#onTake = onTake;
  }

  /** Whether `end()` or `fail()` was called. */
  get ended(): boolean {
    return this.#ended || this.#error !== undefined;
  }

  push(chunk: Uint8Array): void {
    const reader = this.#reader;
    if (reader === undefined) return void this.#chunks.push(chunk);
    this.#reader = undefined;
    this.#onTake(chunk);
    reader.resolve(chunk);
  }

  /** No more chunks: reads end once the queue is empty. */
  end(): void {
    this.#ended = true;
    this.#settle();
  }

  /** Reads fail with `error` once the queue is empty. */
  fail(error: Error): void {
    this.#error ??= error;
    this.#settle();
  }

  read(): Promise<Uint8Array | null> {
    const chunk = this.#chunks.shift();
    if (chunk !== undefined) {
      this.#onTake(chunk);
      return Promise.resolve(chunk);
    }
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve(null);
    this.#reader = Promise.withResolvers();
    return this.#reader.promise;
  }

  #settle(): void {
    const reader = this.#reader;
    this.#reader = undefined;
    if (reader === undefined) return;
    if (this.#error !== undefined) reader.reject(this.#error);
    else reader.resolve(null);
  }
}

/**
 * Waits until the server has processed what `nc` sent before, for at most `ms`: a client that
 * is reconnecting answers only once it is back, and a `close()` must not wait for that.
 */
export async function flushWithin(
  nc: { flush(): Promise<void>; isClosed(): boolean },
  ms: number,
): Promise<void> {
  if (nc.isClosed()) return;
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await Promise.race([
      nc.flush().catch(() => {}),
      new Promise<void>((resolve) => timer = setTimeout(resolve, ms)),
    ]);
  } finally {
    clearTimeout(timer);
  }
}
