// A ByteChannel over anything with postMessage and message events: a Worker (parent side),
// a worker's global scope (worker side), a MessagePort. Bytes travel as transferred
// ArrayBuffers; small writes are coalesced into one message; a credit window bounds what the
// peer may have unread (postMessage itself has no backpressure: its queue would grow without
// bound under a fast writer). With `spinMicros`, a side stays awake after a post until the
// peer's answer is on its way (a bell: two shared counters the peer keeps, of what it posted
// and of what it took), so that answer does not have to wake a sleeping thread. Every end
// keeps the bell of a peer that sent one, whether or not it spins itself: one side may spin
// alone.

import { TransportClosedError } from "../errors.ts";
import type { ByteChannel } from "./_byte_channel_transport.ts";
import { fillOrSwap, outgoing } from "../_transfer_marks.ts";
import { Spinner } from "./_spin.ts";

/** What the channel needs of a Worker, a worker's `self` or a MessagePort. */
export interface MessageEndpoint {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  removeEventListener(type: "message", listener: (event: MessageEvent) => void): void;
}

/** Control messages are numbers: an ack is the credit it returns (> 0), the rest are these. */
const END = -1;
const CLOSE = -2;
const ABORT = -3;
const GONE = -4;
/** A worker's end posts this once it listens; see `HeldEndpoint`. */
export const LISTENING = -5;

/** Slots of a bell (see `PostMessageChannel.#bell`). */
const BELL_POSTED = 0;
const BELL_TAKEN = 1;

/** What a message costs in credit besides its bytes: a burst of tiny ones is bounded too. */
export const MESSAGE_COST = 256;
/** Writes below this join the coalescing buffer; larger ones travel as they are. */
const COALESCE_MAX_BYTES = 4 * 1024;
const COALESCE_BUFFER_BYTES = 64 * 1024;
/**
 * Microtask hops a coalesced batch waits for more writes, and again while they keep coming:
 * a WritableStream hands its sink the next chunk a few hops after the last one settled. A
 * lone write waits for these hops only, never for a task.
 */
const COALESCE_HOPS = 4;

/**
 * Channels of this thread that posted data and have had none back since. A spin waits for one
 * channel's answer while every other channel's messages wait behind it, so a channel spins
 * only when it is the one waiting: a pool's parent, talking to several workers at once, does
 * not (without this rule, a 2-thread pool whose ends all spun made fewer calls/s than one
 * whose ends did not, on a loaded machine: `deno task demo`, its thread pool).
 */
let awaitingChannels = 0;

/** Options of the channel; see WebWorkerTransportOptions. */
export interface PostMessageChannelOptions {
  label: string;
  windowBytes: number;
  /** How long a side that posted waits awake for the peer's answer; 0 never. */
  spinMicros: number;
  /** Called once the channel is released, to remove what the owner attached. */
  onRelease?: () => void;
  /** Post LISTENING once listening: the peer holds its posts until then (`HeldEndpoint`). */
  announceListening?: boolean;
}

export class PostMessageChannel implements ByteChannel {
  readonly label: string;
  readonly #endpoint: MessageEndpoint;
  readonly #window: number;
  readonly #onRelease: (() => void) | undefined;
  readonly #inbox: Uint8Array[] = [];
  #inboxHead = 0;
  /** The inbox's head is the rest of a message whose cost was returned already. */
  #restTaken = false;
  /** The peer sent its last byte (END, CLOSE) or left (GONE as an error). */
  #inboxEnded = false;
  #failure: TransportClosedError | undefined;
  #reader: { resolve(chunk: Uint8Array | null): void; reject(error: unknown): void } | undefined;
  /** Credit consumed here and not yet returned to the peer. */
  #consumed = 0;
  /** Credit the peer has not returned yet. */
  #unacked = 0;
  #creditWaiter: { resolve(): void; reject(error: unknown): void } | undefined;
  /** The peer will read nothing more: our writes fail. */
  #peerClosed = false;
  #endSent = false;
  #released = false;
  #staging: Uint8Array | undefined;
  #staged = 0;
  #flushScheduled = false;
  #hops = 0;
  #stagedSinceHop = false;
  /**
   * Shared memory only the peer writes (sent to it before our first data message): at
   * BELL_POSTED the count of data messages it posted here, stored after each post; at
   * BELL_TAKEN the count of ours it received, stored as each arrives. Undefined when not
   * spinning.
   */
  readonly #bell: Int32Array | undefined;
  #bellSent = false;
  /** The peer's bell, once it sent it: kept up to date as described at `#bell`. */
  #peerBell: Int32Array | undefined;
  /** Data messages received, compared with the bell: a higher bell is a message on its way. */
  #received = 0;
  /** Data messages posted: what the peer's bell holds once the peer sent it. */
  #posted = 0;
  readonly #spinner: Spinner;
  #spinQueued = false;
  /** Counted in awaitingChannels: posted data, and has had none back since. */
  #awaiting = false;

  constructor(endpoint: MessageEndpoint, options: PostMessageChannelOptions) {
    this.label = options.label;
    this.#endpoint = endpoint;
    this.#window = options.windowBytes;
    this.#onRelease = options.onRelease;
    this.#spinner = new Spinner(options.spinMicros);
    if (this.#spinner.enabled && typeof SharedArrayBuffer === "function") {
      this.#bell = new Int32Array(new SharedArrayBuffer(8));
    }
    endpoint.addEventListener("message", this.#onMessage);
    if (options.announceListening) this.#post(LISTENING);
  }

  /** The context at the other end failed or went away: every pending op fails with `error`. */
  fail(error: TransportClosedError): void {
    if (this.#failure !== undefined || this.#released) return;
    this.#failure = error;
    this.#staged = 0;
    this.#answered();
    this.#rejectReader(error);
    this.#rejectCredit(error);
  }

  /** Tells the peer this context is going away (a worker closing itself). */
  announceGone(): void {
    if (this.#released || this.#failure !== undefined) return;
    this.#flush();
    this.#post(GONE);
  }

  read(): Promise<Uint8Array | null> {
    const ready = this.#ready();
    if (ready !== undefined) return ready;
    return new Promise((resolve, reject) => this.#reader = { resolve, reject });
  }

  /**
   * Reads into `view`. A message that is exactly the rest of `view`'s buffer (a large frame's
   * payload, read into the frame's own buffer) is not copied: `view`'s buffer is detached and
   * the message's returned instead, as a BYOB read's transfer would.
   */
  async readInto(view: Uint8Array): Promise<Uint8Array | null> {
    const chunk = await this.read();
    if (chunk === null) return null;
    const { read, rest } = fillOrSwap(view, chunk);
    if (rest !== undefined) this.#putBack(rest);
    return read;
  }

  /** What a read gets at once, if anything: a chunk, the end, or the failure. */
  #ready(): Promise<Uint8Array | null> | undefined {
    if (this.#inboxHead < this.#inbox.length) return Promise.resolve(this.#take());
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    if (this.#inboxEnded || this.#released) return Promise.resolve(null);
    return undefined;
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    this.#checkWritable();
    const length = chunk.length;
    if (length === 0) return undefined;
    if (length < COALESCE_MAX_BYTES) {
      if (this.#staged + length > COALESCE_BUFFER_BYTES) this.#flush();
      const staging = this.#staging ??= new Uint8Array(COALESCE_BUFFER_BYTES);
      staging.set(chunk, this.#staged);
      this.#staged += length;
      this.#stagedSinceHop = true;
      if (!this.#flushScheduled) {
        this.#flushScheduled = true;
        this.#hops = 0;
        queueMicrotask(this.#hop);
      }
    } else {
      const { message, transfer } = outgoing(chunk);
      const staged = this.#takeStaged();
      if (staged === undefined) this.#send(message, transfer);
      else {
        // One message for the staged bytes (a large frame's header, say) and the chunk after
        // them: the peer is woken once, and finds both at once.
        this.#unacked += staged.length + message.length + 2 * MESSAGE_COST;
        this.#postData([staged, message], transfer);
      }
    }
    return this.#unacked >= this.#window ? this.#waitForCredit() : undefined;
  }

  closeWrite(): Promise<void> {
    this.#flush();
    if (!this.#endSent && this.#failure === undefined && !this.#peerClosed) {
      this.#endSent = true;
      this.#post(END);
    }
    return Promise.resolve();
  }

  close(abortive: boolean): Promise<void> {
    if (this.#released) return Promise.resolve();
    if (this.#failure === undefined) {
      if (abortive) {
        this.#staged = 0;
        this.#post(ABORT);
      } else {
        this.#flush();
        this.#post(CLOSE);
      }
    }
    this.#released = true;
    this.#answered();
    this.#endpoint.removeEventListener("message", this.#onMessage);
    const closed = abortive
      ? new TransportClosedError(`${this.label} was aborted`)
      : new TransportClosedError(`${this.label} is closed`);
    if (abortive) this.#rejectReader(closed);
    else this.#resolveReader(null);
    this.#rejectCredit(closed);
    this.#inbox.length = this.#inboxHead = 0;
    this.#onRelease?.();
    return Promise.resolve();
  }

  readonly #onMessage = (event: MessageEvent): void => {
    const data = event.data;
    if (data instanceof Uint8Array) {
      this.#receivedData();
      this.#receive(data);
    } else if (typeof data === "number") this.#onControl(data);
    else if (Array.isArray(data)) {
      this.#receivedData();
      for (const chunk of data) if (chunk instanceof Uint8Array) this.#receive(chunk);
    } else if (
      data instanceof Int32Array && data.buffer instanceof SharedArrayBuffer && data.length === 2
    ) {
      this.#peerBell = data;
      Atomics.store(data, BELL_POSTED, this.#posted);
      Atomics.store(data, BELL_TAKEN, this.#received);
    }
  };

  #receivedData(): void {
    this.#received = (this.#received + 1) | 0;
    const peerBell = this.#peerBell;
    if (peerBell !== undefined) Atomics.store(peerBell, BELL_TAKEN, this.#received);
    this.#answered();
  }

  #receive(chunk: Uint8Array): void {
    if (this.#released || this.#inboxEnded) return;
    if (this.#reader !== undefined && this.#inboxHead === this.#inbox.length) {
      this.#consume(chunk.length + MESSAGE_COST);
      this.#resolveReader(chunk);
    } else this.#inbox.push(chunk);
  }

  #onControl(code: number): void {
    if (code > 0) {
      this.#unacked -= code;
      if (this.#creditWaiter !== undefined && this.#unacked < this.#window) {
        const waiter = this.#creditWaiter;
        this.#creditWaiter = undefined;
        waiter.resolve();
      }
    } else if (code === END || code === CLOSE) {
      this.#inboxEnded = true;
      if (code === CLOSE) {
        this.#peerClosed = true;
        this.#staged = 0;
        this.#rejectCredit(new TransportClosedError(`${this.label}: the peer closed`));
      }
      if (this.#inboxHead === this.#inbox.length) this.#resolveReader(null);
    } else if (code === ABORT) {
      this.fail(new TransportClosedError(`${this.label}: the peer aborted`));
    } else if (code === GONE) {
      this.fail(new TransportClosedError(`${this.label}: the worker closed itself`));
    }
  }

  #take(): Uint8Array {
    const chunk = this.#inbox[this.#inboxHead++];
    if (this.#inboxHead === this.#inbox.length) this.#inbox.length = this.#inboxHead = 0;
    this.#consume(chunk.length + (this.#restTaken ? 0 : MESSAGE_COST));
    this.#restTaken = false;
    return chunk;
  }

  /** The unread rest of a message `readInto` took part of: it is read next. */
  #putBack(rest: Uint8Array): void {
    this.#consume(-rest.length);
    if (this.#inboxHead > 0) this.#inbox[--this.#inboxHead] = rest;
    else this.#inbox.unshift(rest);
    this.#restTaken = true;
  }

  /** Returns credit once a quarter of the window was read: one ack per 1/4 window, not per message. */
  #consume(credit: number): void {
    this.#consumed += credit;
    if (this.#consumed >= this.#window >>> 2 && !this.#released && !this.#peerClosed) {
      this.#post(this.#consumed);
      this.#consumed = 0;
    }
  }

  #checkWritable(): void {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#released) throw new TransportClosedError(`${this.label} is closed`);
    if (this.#peerClosed) throw new TransportClosedError(`${this.label}: the peer closed`);
  }

  readonly #hop = (): void => {
    if (this.#staged === 0) {
      this.#flushScheduled = false;
      return;
    }
    if (this.#stagedSinceHop) {
      this.#stagedSinceHop = false;
      this.#hops = 0;
    }
    if (++this.#hops < COALESCE_HOPS) {
      queueMicrotask(this.#hop);
      return;
    }
    this.#flushScheduled = false;
    this.#flush();
  };

  #flush(): void {
    const staged = this.#takeStaged();
    // Cloned, not transferred: small messages go faster without a transfer list.
    if (staged !== undefined) this.#send(staged, []);
  }

  /** The staged bytes as a chunk of their own, if any; nothing is staged afterwards. */
  #takeStaged(): Uint8Array | undefined {
    const staged = this.#staged;
    if (staged === 0 || this.#released || this.#failure !== undefined) return undefined;
    this.#staged = 0;
    return this.#staging!.slice(0, staged);
  }

  #send(message: Uint8Array, transfer: Transferable[]): void {
    this.#unacked += message.length + MESSAGE_COST;
    this.#postData(message, transfer);
  }

  /**
   * Posts a data message, rings the peer's bell, and, when this side spins, queues a spin for
   * the answer. A post to a thread whose CPU went idle wakes it through the OS (and, in a VM,
   * the hypervisor), which costs the poster and the wakee far more than a post to a thread
   * that is still running: staying awake after a post until the peer's answer is posted makes
   * that answer the cheap kind (bench/report/notes.md, "The parent's end waits by default").
   */
  #postData(message: unknown, transfer: Transferable[]): void {
    const bell = this.#bell;
    if (bell !== undefined && !this.#bellSent) {
      this.#bellSent = true;
      this.#endpoint.postMessage(bell, []);
    }
    this.#endpoint.postMessage(message, transfer);
    this.#posted = (this.#posted + 1) | 0;
    const peerBell = this.#peerBell;
    if (peerBell !== undefined) Atomics.store(peerBell, BELL_POSTED, this.#posted);
    if (bell === undefined) return;
    if (!this.#awaiting) {
      this.#awaiting = true;
      awaitingChannels++;
    }
    if (!this.#spinQueued) {
      this.#spinQueued = true;
      queueMicrotask(this.#spin);
    }
  }

  #answered(): void {
    if (!this.#awaiting) return;
    this.#awaiting = false;
    awaitingChannels--;
  }

  /**
   * In the microtask after a post, while a read waits for the answer: spins until the peer's
   * bell says a message is on its way (the event loop then finds it queued), as `Spinner`
   * allows. The bell went before the first data message, so the peer bumps it after each post
   * that answers one, whether or not it spins itself.
   */
  readonly #spin = (): void => {
    this.#spinQueued = false;
    if (
      this.#reader === undefined || this.#released || this.#failure !== undefined ||
      awaitingChannels > 1
    ) return;
    if (this.#spinner.shouldSpin()) this.#spinner.spinUntil(this.#bellRang, this.#taken);
  };

  /** Whether the peer posted a message not received yet. */
  readonly #bellRang = (): boolean =>
    ((Atomics.load(this.#bell!, BELL_POSTED) - this.#received) | 0) > 0;

  /** Whether the peer received every data message this side posted. */
  readonly #taken = (): boolean =>
    ((Atomics.load(this.#bell!, BELL_TAKEN) - this.#posted) | 0) >= 0;

  #post(code: number): void {
    try {
      this.#endpoint.postMessage(code, []);
    } catch {
      // The other context is gone; its failure reaches us by its own event.
    }
  }

  #waitForCredit(): Promise<void> {
    return new Promise((resolve, reject) => this.#creditWaiter = { resolve, reject });
  }

  #resolveReader(chunk: Uint8Array | null): void {
    const reader = this.#reader;
    if (reader === undefined) return;
    this.#reader = undefined;
    reader.resolve(chunk);
  }

  #rejectReader(error: unknown): void {
    const reader = this.#reader;
    if (reader === undefined) return;
    this.#reader = undefined;
    reader.reject(error);
  }

  #rejectCredit(error: unknown): void {
    const waiter = this.#creditWaiter;
    if (waiter === undefined) return;
    this.#creditWaiter = undefined;
    waiter.reject(error);
  }
}
