// Credit-based flow control for one stream (docs/protocol.md §7): the consuming side
// (StreamInbox) and the producing side (StreamPump). Both are driven by the channel core and
// report to an owner object, so a stream costs no closures per item.

/** What a {@linkcode StreamInbox} asks of its owner. */
export interface InboxOwner {
  /** Sends CREDIT for this stream. */
  grantCredit(bytes: number): void;
  /** The consumer stopped early: send CANCEL for this stream. */
  abandonStream(): void;
}

const OPEN = 0;
const ENDED = 1;
const FAILED = 2;
const ABANDONED = 3;

const DONE: IteratorReturnResult<undefined> = Object.freeze({ done: true, value: undefined });

/**
 * The consuming end of a stream: buffers the items the peer sent and hands them to one
 * async iterator, granting credit back as they are consumed. The buffer holds at most the
 * window plus one frame, since a peer that sends beyond its credit is refused.
 */
export class StreamInbox<T> implements AsyncIterableIterator<T> {
  readonly #owner: InboxOwner;
  readonly #window: number;
  readonly #grantAt: number;
  #granted = 0;
  #received = 0;
  #ungranted = 0;
  #items: T[] = [];
  #costs: number[] = [];
  #head = 0;
  #state = OPEN;
  #error: unknown;
  #waiter: PromiseWithResolvers<IteratorResult<T>> | undefined;

  constructor(owner: InboxOwner, window: number) {
    this.#owner = owner;
    this.#window = window;
    this.#grantAt = Math.max(1, Math.floor(window / 2));
  }

  /** Whether the stream has ended, failed or been abandoned. */
  get closed(): boolean {
    return this.#state !== OPEN;
  }

  /** Whether the consumer abandoned the stream. */
  get abandoned(): boolean {
    return this.#state === ABANDONED;
  }

  /** Credit the peer still has, as this side counts it. */
  get credit(): number {
    return this.#window + this.#granted - this.#received;
  }

  /**
   * Accepts one item that cost `cost` bytes. Returns false, accepting nothing, when the peer
   * had no credit left: a protocol error.
   */
  push(item: T, cost: number): boolean {
    if (this.#window + this.#granted - this.#received <= 0) return false;
    this.#received += cost;
    if (this.#state !== OPEN) return true;
    const waiter = this.#waiter;
    if (waiter !== undefined) {
      this.#waiter = undefined;
      this.#consumed(cost);
      waiter.resolve({ done: false, value: item });
      return true;
    }
    this.#items.push(item);
    this.#costs.push(cost);
    return true;
  }

  /** Counts the cost of an item that arrived but will not be delivered (it could not be decoded). */
  charge(cost: number): boolean {
    if (this.#window + this.#granted - this.#received <= 0) return false;
    this.#received += cost;
    return true;
  }

  /** The producer finished: the consumer sees the end after the buffered items. */
  end(): void {
    if (this.#state !== OPEN) return;
    this.#state = ENDED;
    this.#wake();
  }

  /**
   * The stream failed. With `immediate`, buffered items are dropped and the consumer sees the
   * error at once (local abort, deadline, lost connection); otherwise after them (the
   * producer's own error).
   */
  fail(error: unknown, immediate: boolean): void {
    if (this.#state !== OPEN && this.#state !== ENDED) return;
    if (this.#state === ENDED && !immediate) return;
    this.#state = FAILED;
    this.#error = error;
    if (immediate) this.#clear();
    this.#wake();
  }

  /** Stops delivering without telling the peer (the call finished, so the peer stops anyway). */
  close(): void {
    if (this.#state !== OPEN) return;
    this.#state = ABANDONED;
    this.#clear();
    this.#wake();
  }

  next(): Promise<IteratorResult<T>> {
    if (this.#head < this.#items.length) {
      const head = this.#head;
      const item = this.#items[head];
      const cost = this.#costs[head];
      if (head + 1 === this.#items.length) {
        this.#items = [];
        this.#costs = [];
        this.#head = 0;
      } else {
        this.#items[head] = undefined as T;
        this.#head = head + 1;
      }
      this.#consumed(cost);
      return Promise.resolve({ done: false, value: item });
    }
    switch (this.#state) {
      case OPEN:
        this.#waiter = Promise.withResolvers<IteratorResult<T>>();
        return this.#waiter.promise;
      case FAILED:
        // Deliver the error once; later reads see the end.
        this.#state = ENDED;
        return Promise.reject(this.#error);
      default:
        return Promise.resolve(DONE);
    }
  }

  return(): Promise<IteratorResult<T>> {
    if (this.#state === OPEN) {
      this.#state = ABANDONED;
      this.#clear();
      this.#wake();
      this.#owner.abandonStream();
    } else if (this.#state === FAILED) {
      this.#state = ENDED;
    }
    return Promise.resolve(DONE);
  }

  [Symbol.asyncIterator](): this {
    return this;
  }

  #consumed(cost: number): void {
    if (this.#state !== OPEN) return;
    this.#ungranted += cost;
    if (this.#ungranted >= this.#grantAt) {
      const bytes = this.#ungranted;
      this.#ungranted = 0;
      this.#granted += bytes;
      this.#owner.grantCredit(bytes);
    }
  }

  #clear(): void {
    this.#items = [];
    this.#costs = [];
    this.#head = 0;
  }

  #wake(): void {
    const waiter = this.#waiter;
    if (waiter === undefined) return;
    this.#waiter = undefined;
    if (this.#state === FAILED) {
      this.#state = ENDED;
      waiter.reject(this.#error);
    } else {
      waiter.resolve(DONE);
    }
  }
}

/** What a {@linkcode StreamPump} asks of its owner. */
export interface PumpOwner {
  /** Encodes and sends one item; returns its cost in credit. Throws when it cannot be sent. */
  sendItem(value: unknown): number;
  /** The source finished: send END. */
  sendEnd(): void;
  /** The source failed: send ERROR. */
  sendFailure(error: unknown): void;
  /** Undefined while the transport takes more; else a promise of when it will. */
  writable(): Promise<void> | undefined;
}

/**
 * The producing end of a stream: pulls items from a source while it has credit and sends
 * them. {@linkcode stop} (the consumer cancelled, or the call ended) makes it call the
 * source's `return()`, so a generator's `finally` runs.
 */
export class StreamPump {
  readonly #owner: PumpOwner;
  readonly #source: AsyncIterable<unknown>;
  #credit: number;
  #stopped = false;
  #wake: (() => void) | undefined;

  constructor(owner: PumpOwner, source: AsyncIterable<unknown>, credit: number) {
    this.#owner = owner;
    this.#source = source;
    this.#credit = credit;
  }

  /** Whether the pump was stopped. */
  get stopped(): boolean {
    return this.#stopped;
  }

  /** Starts pulling; the returned promise settles once the source is finished or stopped. */
  run(): Promise<void> {
    return this.#run();
  }

  /** Adds credit granted by the consumer. */
  credit(bytes: number): void {
    this.#credit += bytes;
    if (this.#credit > 0) this.#resume();
  }

  /** Stops pulling and closes the source. */
  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.#resume();
  }

  async #run(): Promise<void> {
    let iterator: AsyncIterator<unknown>;
    try {
      iterator = this.#source[Symbol.asyncIterator]();
    } catch (error) {
      if (!this.#stopped) this.#owner.sendFailure(error);
      return;
    }
    let finished = false;
    try {
      while (!this.#stopped) {
        if (this.#credit <= 0) {
          await new Promise<void>((resolve) => this.#wake = resolve);
          continue;
        }
        const writable = this.#owner.writable();
        if (writable !== undefined) {
          await writable;
          continue;
        }
        const step = await iterator.next();
        if (this.#stopped) break;
        if (step.done) {
          finished = true;
          this.#owner.sendEnd();
          return;
        }
        this.#credit -= this.#owner.sendItem(step.value);
      }
    } catch (error) {
      if (!this.#stopped) {
        this.#stopped = true;
        this.#owner.sendFailure(error);
      }
    } finally {
      if (!finished) {
        try {
          await iterator.return?.();
        } catch {
          // The source failed while closing; the stream is over either way.
        }
      }
    }
  }

  #resume(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}
