// The liveness and the reads of one NATS connection's end: the heartbeat, and the queue of
// chunks received and not yet read (its credit window is transports/_credit_window.ts).

import { timerDelay, within } from "../_runtime.ts";

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
    this.#timer = setInterval(this.#tick, timerDelay(intervalMs));
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
  await within(nc.flush().catch(() => {}), ms, undefined);
}
