// A ByteChannel over anything with postMessage and message events: a Worker (parent side),
// a worker's global scope (worker side), a MessagePort. Bytes travel as transferred
// ArrayBuffers; small writes are coalesced into one message (WriteCoalescer, below); a credit
// window bounds what the peer may have unread (_credit_window.ts: postMessage itself has no
// backpressure, its queue would grow without bound under a fast writer). With `spinMicros`, a
// side stays awake after a post until the peer's answer is on its way (PostBell, below). The
// parent's end of a Worker posts through a HeldEndpoint (below) until the worker listens.
//
// The channel's lifecycle is one state, its transitions in TRANSITIONS:
//
//   OPEN ──closeWrite()──▶ WRITE_ENDED ──peer's END──┐
//     └───peer's END────▶ READ_ENDED ──closeWrite()──┴─▶ BOTH_ENDED
//   any of those ──peer's CLOSE──▶ PEER_CLOSED (reads end, writes fail)
//   any but FAILED, RELEASED ──fail()──▶ FAILED;  any but RELEASED ──close()──▶ RELEASED
//
// What the channel failed with stays in `#failure` once it is released.

import { TransportClosedError } from "../errors.ts";
import type { ByteChannel } from "./_byte_channel_transport.ts";
import { fillOrSwap, outgoing } from "../transfer.ts";
import { ReceiveCredit, SendCredit } from "./_credit_window.ts";
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

/** What a message costs in credit besides its bytes: a burst of tiny ones is bounded too. */
export const MESSAGE_COST = 256;

/** Both ways open. */
const OPEN = 0;
/** This side sent END: it writes no more. */
const WRITE_ENDED = 1;
/** The peer sent END: reads end once the inbox is empty. */
const READ_ENDED = 2;
const BOTH_ENDED = 3;
/** The peer sent CLOSE: it reads nothing more, and sends nothing more. */
const PEER_CLOSED = 4;
/** `fail()`: the other context failed or went away. */
const FAILED = 5;
/** `close()`: this side let go of the channel. */
const RELEASED = 6;

const TRANSITIONS: readonly (readonly number[])[] = [
  /* OPEN */ [WRITE_ENDED, READ_ENDED, PEER_CLOSED, FAILED, RELEASED],
  /* WRITE_ENDED */ [BOTH_ENDED, PEER_CLOSED, FAILED, RELEASED],
  /* READ_ENDED */ [BOTH_ENDED, PEER_CLOSED, FAILED, RELEASED],
  /* BOTH_ENDED */ [PEER_CLOSED, FAILED, RELEASED],
  /* PEER_CLOSED */ [FAILED, RELEASED],
  /* FAILED */ [RELEASED],
  /* RELEASED */ [],
];

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
  readonly readIntoMoves = true;
  readonly label: string;
  readonly #endpoint: MessageEndpoint;
  readonly #onRelease: (() => void) | undefined;
  #state = OPEN;
  #failure: TransportClosedError | undefined;
  readonly #inbox: Uint8Array[] = [];
  #inboxHead = 0;
  /** The inbox's head is the rest of a message whose cost was returned already. */
  #restTaken = false;
  #reader: { resolve(chunk: Uint8Array | null): void; reject(error: unknown): void } | undefined;
  /** What this side may still post; acks from the peer grow it. */
  readonly #sendCredit: SendCredit;
  /** What this side read, returned to the peer as acks. */
  readonly #receiveCredit: ReceiveCredit;
  readonly #coalescer = new WriteCoalescer(() => this.#flush());
  readonly #bell: PostBell;

  constructor(endpoint: MessageEndpoint, options: PostMessageChannelOptions) {
    this.label = options.label;
    this.#endpoint = endpoint;
    this.#sendCredit = new SendCredit(options.windowBytes);
    this.#receiveCredit = new ReceiveCredit(options.windowBytes);
    this.#onRelease = options.onRelease;
    this.#bell = new PostBell(
      endpoint,
      options.spinMicros,
      () => this.#reader !== undefined && this.#state < FAILED,
    );
    endpoint.addEventListener("message", this.#onMessage);
    if (options.announceListening) this.#post(LISTENING);
  }

  /** The context at the other end failed or went away: every pending op fails with `error`. */
  fail(error: TransportClosedError): void {
    if (!this.#enter(FAILED)) return;
    this.#failure = error;
    this.#coalescer.drop();
    this.#bell.answered();
    this.#rejectReader(error);
    this.#sendCredit.fail(error);
  }

  /** Tells the peer this context is going away (a worker closing itself). */
  announceGone(): void {
    if (this.#state >= FAILED) return;
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
    if (this.#state >= READ_ENDED && this.#state !== WRITE_ENDED) return Promise.resolve(null);
    return undefined;
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    if (this.#state >= PEER_CLOSED) this.#throwUnwritable();
    const length = chunk.length;
    if (length === 0) return undefined;
    if (length < COALESCE_MAX_BYTES) this.#coalescer.stage(chunk);
    else {
      const { message, transfer } = outgoing(chunk);
      const staged = this.#takeStaged();
      if (staged === undefined) this.#send(message, transfer);
      else {
        // One message for the staged bytes (a large frame's header, say) and the chunk after
        // them: the peer is woken once, and finds both at once.
        this.#sendCredit.spend(staged.length + message.length + 2 * MESSAGE_COST);
        this.#bell.post([staged, message], transfer);
      }
    }
    const credit = this.#sendCredit;
    return credit.available <= 0 ? credit.wait() : undefined;
  }

  closeWrite(): Promise<void> {
    this.#flush();
    if (this.#enter(this.#state === READ_ENDED ? BOTH_ENDED : WRITE_ENDED)) this.#post(END);
    return Promise.resolve();
  }

  close(abortive: boolean): Promise<void> {
    if (this.#state === RELEASED) return Promise.resolve();
    if (this.#failure === undefined) {
      if (abortive) {
        this.#coalescer.drop();
        this.#post(ABORT);
      } else {
        this.#flush();
        this.#post(CLOSE);
      }
    }
    this.#enter(RELEASED);
    this.#bell.answered();
    this.#endpoint.removeEventListener("message", this.#onMessage);
    const closed = abortive
      ? new TransportClosedError(`${this.label} was aborted`)
      : new TransportClosedError(`${this.label} is closed`);
    if (abortive) this.#rejectReader(closed);
    else this.#resolveReader(null);
    this.#sendCredit.fail(closed);
    this.#inbox.length = this.#inboxHead = 0;
    this.#onRelease?.();
    return Promise.resolve();
  }

  /** Moves to `next`; false (and nothing changes) when TRANSITIONS has no such move. */
  #enter(next: number): boolean {
    if (!TRANSITIONS[this.#state].includes(next)) return false;
    this.#state = next;
    return true;
  }

  readonly #onMessage = (event: MessageEvent): void => {
    const data = event.data;
    if (data instanceof Uint8Array) {
      this.#bell.arrived();
      this.#receive(data);
    } else if (typeof data === "number") this.#onControl(data);
    else if (Array.isArray(data)) {
      this.#bell.arrived();
      for (const chunk of data) if (chunk instanceof Uint8Array) this.#receive(chunk);
    } else this.#bell.takePeerBell(data);
  };

  #receive(chunk: Uint8Array): void {
    // After the peer's END or CLOSE, or once released: nothing more is read.
    if (this.#state >= READ_ENDED && this.#state !== WRITE_ENDED && this.#state !== FAILED) {
      return;
    }
    // A view of shared memory is not a chunk the reader may keep: the peer can change it
    // under the reader after any check. A peer's end never sends one.
    if (!(chunk.buffer instanceof ArrayBuffer)) {
      this.fail(new TransportClosedError(`${this.label}: the peer sent data in shared memory`));
      return;
    }
    // A peer that keeps to the credit window starts a message at most a coalescing buffer past
    // what this end granted (CREDIT_SLACK); one that does not would make this end keep all it
    // posts, without bound.
    const over = this.#receiveCredit.receive(chunk.length + MESSAGE_COST, CREDIT_SLACK);
    if (over !== undefined) return this.#overran(over);
    if (this.#reader !== undefined && this.#inboxHead === this.#inbox.length) {
      this.#consume(chunk.length + MESSAGE_COST);
      this.#resolveReader(chunk);
    } else this.#inbox.push(chunk);
  }

  /** The peer ignored the credit window: the channel fails, and drops what it kept unread. */
  #overran(over: string): void {
    if (this.#state !== FAILED) {
      this.fail(
        new TransportClosedError(
          `${this.label}: the peer sent past the credit this end granted (${over}): it ignores ` +
            "the credit window (do both ends use the same windowBytes?)",
        ),
      );
    }
    this.#inbox.length = this.#inboxHead = 0;
    this.#restTaken = false;
  }

  #onControl(code: number): void {
    if (code > 0) this.#sendCredit.grantMore(code);
    else if (code === END) {
      this.#enter(this.#state === WRITE_ENDED ? BOTH_ENDED : READ_ENDED);
      if (this.#inboxHead === this.#inbox.length) this.#resolveReader(null);
    } else if (code === CLOSE) {
      if (this.#enter(PEER_CLOSED)) {
        this.#coalescer.drop();
        this.#sendCredit.fail(new TransportClosedError(`${this.label}: the peer closed`));
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
    const receiveCredit = this.#receiveCredit;
    const before = receiveCredit.granted;
    const granted = receiveCredit.consume(credit);
    if (granted !== undefined && this.#state !== PEER_CLOSED && this.#state !== RELEASED) {
      this.#post(granted - before);
    }
  }

  #throwUnwritable(): never {
    if (this.#failure !== undefined) throw this.#failure;
    if (this.#state === RELEASED) throw new TransportClosedError(`${this.label} is closed`);
    throw new TransportClosedError(`${this.label}: the peer closed`);
  }

  #flush(): void {
    const staged = this.#takeStaged();
    // Cloned, not transferred: small messages go faster without a transfer list.
    if (staged !== undefined) this.#send(staged, []);
  }

  /** The staged bytes as a chunk of their own, if any; nothing is staged afterwards. */
  #takeStaged(): Uint8Array | undefined {
    return this.#state >= FAILED ? undefined : this.#coalescer.take();
  }

  #send(message: Uint8Array, transfer: Transferable[]): void {
    this.#sendCredit.spend(message.length + MESSAGE_COST);
    this.#bell.post(message, transfer);
  }

  #post(code: number): void {
    try {
      this.#endpoint.postMessage(code, []);
    } catch {
      // The other context is gone; its failure reaches us by its own event.
    }
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
}

// The parent's side of a Worker, holding what it posts until the worker listens. Deno drops a
// message that reaches a worker before it has a message listener (while its module loads, or
// awaits at its top level before it creates its transport), and a dropped HELLO broke the
// handshake ("The first frame was CALL, not HELLO", workers/thread_worker_test.ts). The
// worker's end posts LISTENING once it listens (selfTransport); until that arrives, posts are
// kept in order, cloned now as a post would clone them (so a writer may reuse its buffer).

export class HeldEndpoint implements MessageEndpoint {
  readonly #target: MessageEndpoint;
  #held: unknown[] | undefined = [];

  constructor(target: MessageEndpoint) {
    this.#target = target;
    target.addEventListener("message", this.#onMessage);
  }

  postMessage(message: unknown, transfer: Transferable[]): void {
    if (this.#held === undefined) this.#target.postMessage(message, transfer);
    else {this.#held.push(
        sharedOrNumber(message) ? message : structuredClone(message, { transfer }),
      );}
  }

  addEventListener(type: "message", listener: (event: MessageEvent) => void): void {
    this.#target.addEventListener(type, listener);
  }

  removeEventListener(type: "message", listener: (event: MessageEvent) => void): void {
    this.#target.removeEventListener(type, listener);
  }

  /**
   * The transport was released: stops waiting for LISTENING, unless posts are held (a close
   * whose writes and END the worker has not listened for yet), which still go once it listens.
   */
  release(): void {
    if (this.#held === undefined || this.#held.length === 0) this.#detach();
  }

  #detach(): void {
    this.#target.removeEventListener("message", this.#onMessage);
    this.#held = undefined;
  }

  readonly #onMessage = (event: MessageEvent): void => {
    if (event.data !== LISTENING || this.#held === undefined) return;
    const held = this.#held;
    this.#detach();
    for (const message of held) this.#target.postMessage(message, []);
  };
}

/** A number, or a view of shared memory: posted as it is (shared memory is meant to be shared). */
function sharedOrNumber(message: unknown): boolean {
  return typeof message === "number" ||
    (ArrayBuffer.isView(message) && message.buffer instanceof SharedArrayBuffer);
}

// Small writes of the Web Worker transport, gathered into one message: a burst of frames
// costs the peer one wake-up, not one per frame.

/** Writes below this join the coalescing buffer; larger ones travel as they are. */
export const COALESCE_MAX_BYTES = 4 * 1024;
const COALESCE_BUFFER_BYTES = 64 * 1024;
/**
 * How far past the credit it was granted a peer may start a message: its coalesced bytes may
 * be flushed after its credit ran out, and a write staged then goes too (the channel checks
 * incoming messages against it).
 */
const CREDIT_SLACK = COALESCE_BUFFER_BYTES + COALESCE_MAX_BYTES + 2 * MESSAGE_COST;
/**
 * Microtask hops a coalesced batch waits for more writes, and again while they keep coming:
 * a WritableStream hands its sink the next chunk a few hops after the last one settled. A
 * lone write waits for these hops only, never for a task.
 */
const COALESCE_HOPS = 4;

/** The bytes staged for the next message, and the microtask hops that decide when it goes. */
export class WriteCoalescer {
  #staging: Uint8Array | undefined;
  #staged = 0;
  #scheduled = false;
  #hops = 0;
  #stagedSinceHop = false;
  readonly #flush: () => void;

  /** @param flush Called when the staged bytes should go: it takes them with `take()`. */
  constructor(flush: () => void) {
    this.#flush = flush;
  }

  /** Stages `chunk` (shorter than COALESCE_MAX_BYTES), flushing first if it does not fit. */
  stage(chunk: Uint8Array): void {
    const length = chunk.length;
    if (this.#staged + length > COALESCE_BUFFER_BYTES) this.#flush();
    const staging = this.#staging ??= new Uint8Array(COALESCE_BUFFER_BYTES);
    staging.set(chunk, this.#staged);
    this.#staged += length;
    this.#stagedSinceHop = true;
    if (!this.#scheduled) {
      this.#scheduled = true;
      this.#hops = 0;
      queueMicrotask(this.#hop);
    }
  }

  /** The staged bytes as a chunk of their own, if any; nothing is staged afterwards. */
  take(): Uint8Array | undefined {
    const staged = this.#staged;
    if (staged === 0) return undefined;
    this.#staged = 0;
    return this.#staging!.slice(0, staged);
  }

  /** Forgets the staged bytes: they will not be sent. */
  drop(): void {
    this.#staged = 0;
  }

  readonly #hop = (): void => {
    if (this.#staged === 0) {
      this.#scheduled = false;
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
    this.#scheduled = false;
    this.#flush();
  };
}

// The spin of the Web Worker transport. With `spinMicros`, a side stays awake after a post
// until the peer's answer is on its way, so that answer does not have to wake a sleeping
// thread. It learns that from a bell: two shared counters the peer keeps, of what it posted
// and of what it took. Every end keeps the bell of a peer that sent one, whether or not it
// spins itself: one side may spin alone.

/** Slots of a bell (see `PostBell.#own`). */
const BELL_POSTED = 0;
const BELL_TAKEN = 1;

/**
 * Channels of this thread that posted data and have had none back since. A spin waits for one
 * channel's answer while every other channel's messages wait behind it, so a channel spins
 * only when it is the one waiting: a pool's parent, talking to several workers at once, does
 * not (without this rule, a 2-thread pool whose ends all spun made fewer calls/s than one
 * whose ends did not, on a loaded machine: `deno task demo`, its thread pool).
 */
let awaitingChannels = 0;

/** Where a bell's channel posts: its endpoint (a Worker, a worker's `self`, a MessagePort). */
export interface PostTarget {
  postMessage(message: unknown, transfer: Transferable[]): void;
}

/** A channel's data posts and arrivals, counted for both bells, and its spin after a post. */
export class PostBell {
  readonly #endpoint: PostTarget;
  /**
   * Shared memory only the peer writes (sent to it before our first data message): at
   * BELL_POSTED the count of data messages it posted here, stored after each post; at
   * BELL_TAKEN the count of ours it received, stored as each arrives. Undefined when not
   * spinning.
   */
  readonly #own: Int32Array | undefined;
  #ownSent = false;
  /** The peer's bell, once it sent it: kept up to date as described at `#own`. */
  #peer: Int32Array | undefined;
  /** Data messages received, compared with the bell: a higher bell is a message on its way. */
  #received = 0;
  /** Data messages posted: what the peer's bell holds once the peer sent it. */
  #posted = 0;
  readonly #spinner: Spinner;
  #spinQueued = false;
  /** Counted in awaitingChannels: posted data, and has had none back since. */
  #awaiting = false;
  /** Whether a read of the channel waits for the answer (a spin is of use only then). */
  readonly #readWaits: () => boolean;

  constructor(endpoint: PostTarget, spinMicros: number, readWaits: () => boolean) {
    this.#endpoint = endpoint;
    this.#readWaits = readWaits;
    this.#spinner = new Spinner(spinMicros);
    if (this.#spinner.enabled && typeof SharedArrayBuffer === "function") {
      this.#own = new Int32Array(new SharedArrayBuffer(8));
    }
  }

  /**
   * Posts a data message, rings the peer's bell, and, when this side spins, queues a spin for
   * the answer. A post to a thread whose CPU went idle wakes it through the OS (and, in a VM,
   * the hypervisor), which costs the poster and the wakee far more than a post to a thread
   * that is still running: staying awake after a post until the peer's answer is posted makes
   * that answer the cheap kind (bench/report/notes.md, "The parent's end waits by default").
   */
  post(message: unknown, transfer: Transferable[]): void {
    const own = this.#own;
    if (own !== undefined && !this.#ownSent) {
      this.#ownSent = true;
      this.#endpoint.postMessage(own, []);
    }
    this.#endpoint.postMessage(message, transfer);
    this.#posted = (this.#posted + 1) | 0;
    const peer = this.#peer;
    if (peer !== undefined) Atomics.store(peer, BELL_POSTED, this.#posted);
    if (own === undefined) return;
    if (!this.#awaiting) {
      this.#awaiting = true;
      awaitingChannels++;
    }
    if (!this.#spinQueued) {
      this.#spinQueued = true;
      queueMicrotask(this.#spin);
    }
  }

  /** A data message arrived: the peer's bell learns it, and this side is answered. */
  arrived(): void {
    this.#received = (this.#received + 1) | 0;
    const peer = this.#peer;
    if (peer !== undefined) Atomics.store(peer, BELL_TAKEN, this.#received);
    this.answered();
  }

  /** Takes `data` as the peer's bell if it is one; false when it is not. */
  takePeerBell(data: unknown): boolean {
    if (
      !(data instanceof Int32Array && data.buffer instanceof SharedArrayBuffer &&
        data.length === 2)
    ) return false;
    this.#peer = data;
    Atomics.store(data, BELL_POSTED, this.#posted);
    Atomics.store(data, BELL_TAKEN, this.#received);
    return true;
  }

  /** This side waits for no answer any more (one came, or the channel is over). */
  answered(): void {
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
    if (!this.#readWaits() || awaitingChannels > 1) return;
    if (this.#spinner.shouldSpin()) this.#spinner.spinUntil(this.#rang, this.#taken);
  };

  /** Whether the peer posted a message not received yet. */
  readonly #rang = (): boolean =>
    ((Atomics.load(this.#own!, BELL_POSTED) - this.#received) | 0) > 0;

  /** Whether the peer received every data message this side posted. */
  readonly #taken = (): boolean => ((Atomics.load(this.#own!, BELL_TAKEN) - this.#posted) | 0) >= 0;
}
