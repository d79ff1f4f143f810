/**
 * A pool of connections to the instances of a service on NATS, behind one typed `remote`:
 * {@linkcode NatsServicePool}. The instances are `listenNats` listeners on one subject, in
 * as many processes and on as many hosts as you like; the pool finds them through the
 * listeners' discovery subjects (see `@conduit/ipc/transports/nats`), connects to each,
 * sends each call to the least-loaded connection, notices instances that join or leave, and
 * runs a call of a method marked retryable again on another instance when its own dies.
 *
 * @example Three instances, one pool (needs a nats-server; workers/nats_service_pool_test.ts runs the same)
 * ```ts ignore
 * import { connect } from "npm:@nats-io/transport-node@3.4.0";
 * import { openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { listenNats } from "@conduit/ipc/transports/nats";
 * import { NatsServicePool } from "@conduit/ipc/workers/nats";
 * import assert from "node:assert/strict";
 *
 * const handlers = { add: ({ a, b }: { a: number; b: number }) => a + b };
 * // Each instance, usually in a process of its own:
 * for (const instance of ["a", "b", "c"]) {
 *   const nc = await connect({ servers: "127.0.0.1:4222" });
 *   const listener = await listenNats(nc, "math", { queue: "math", instance });
 *   void (async () => {
 *     for await (const t of listener) void openChannel(t, { codec: jsonCodec(), handlers });
 *   })();
 * }
 * // The client:
 * const nc = await connect({ servers: "127.0.0.1:4222" });
 * await using pool = new NatsServicePool<typeof handlers>(nc, "math", {
 *   codec: jsonCodec(),
 *   retryable: ["add"],
 * });
 * await pool.waitForInstances(3);
 * assert.equal(await pool.remote.add({ a: 1, b: 2 }), 3);
 * ```
 *
 * @module
 */

import { integerOption, positiveOption } from "../_options.ts";
import { type Channel, type ChannelOptions, openChannel } from "../channel/channel.ts";
import { ConnectionClosedError, DeadlineExceededError } from "../channel/errors.ts";
import { TransportClosedError } from "../errors.ts";
import { remoteProxy } from "../channel/_remote.ts";
import type { CallOptions, CheckedHandlers, MethodName, RemoteOf } from "../channel/types.ts";
import { DiscoveryWatcher, type Instance } from "../transports/_nats_discovery.ts";
import { connectNats, type ConnectNatsOptions, type NatsClient } from "../transports/nats.ts";
import { CallQueue } from "./_call_queue.ts";
import { type InnerCall, PoolCall } from "./_pool_call.ts";
import { PoolClosedError, PoolQueueFullError } from "./errors.ts";
import { DEFAULT_POOL_MAX_QUEUED } from "./worker_pool.ts";

// The types and errors this API shows, so that its documentation is complete on its own.
export type * from "../channel/_shown_types.ts";
export type {
  ConnectNatsOptions,
  NatsClient,
  NatsMessage,
  NatsSubscribeOptions,
  NatsSubscription,
  NatsTransportOptions,
} from "../transports/nats.ts";
export { ConduitError, TransportClosedError } from "../errors.ts";
export { PoolClosedError, PoolQueueFullError };

/** The default {@linkcode NatsServicePoolOptions.concurrency}: 64 calls per connection. */
export const DEFAULT_NATS_POOL_CONCURRENCY = 64;
/** The default {@linkcode NatsServicePoolOptions.connectionsPerInstance}: 1. */
export const DEFAULT_NATS_POOL_CONNECTIONS = 1;
/** The default {@linkcode NatsServicePoolOptions.maxAttempts}: a retryable call is tried twice. */
export const DEFAULT_NATS_POOL_MAX_ATTEMPTS = 2;
/** The default {@linkcode NatsServicePoolOptions.discoveryInterval}: a probe every second. */
export const DEFAULT_DISCOVERY_INTERVAL = 1_000;

/**
 * Options of {@linkcode NatsServicePool}: its own, and those of every channel it opens (the
 * codec, handlers for call-backs, limits).
 *
 * @typeParam Api The handler interface the instances serve.
 * @typeParam Local The handler object this side serves to each instance.
 */
export interface NatsServicePoolOptions<Api extends object = object, Local extends object = object>
  extends ChannelOptions<Local> {
  /**
   * Connections to open to each instance (more spread one instance's calls over more
   * channels; one usually suffices).
   *
   * @default {DEFAULT_NATS_POOL_CONNECTIONS} (1)
   */
  connectionsPerInstance?: number;
  /**
   * Calls one connection carries at once; further calls wait in the pool's queue.
   *
   * @default {DEFAULT_NATS_POOL_CONCURRENCY} (64)
   */
  concurrency?: number;
  /**
   * Calls that may wait for a connection; one more fails with `PoolQueueFullError`.
   *
   * @default {DEFAULT_POOL_MAX_QUEUED} (1024)
   */
  maxQueued?: number;
  /**
   * Methods safe to run again (idempotent): a call of one of these whose connection died
   * (its instance crashed, or became unreachable) runs again on another instance, up to
   * `maxAttempts` tries in all. Stream calls are never retried.
   *
   * @default {[]}
   */
  retryable?: readonly MethodName<Api>[];
  /**
   * Tries in all for a retryable call.
   *
   * @default {DEFAULT_NATS_POOL_MAX_ATTEMPTS} (2)
   */
  maxAttempts?: number;
  /**
   * How often the pool asks the instances to show themselves, in ms: a new instance is found
   * at once through its announcement, or at the next probe if that was missed.
   *
   * @default {DEFAULT_DISCOVERY_INTERVAL} (1000)
   */
  discoveryInterval?: number;
  /** Settings of the NATS transports the pool opens (window, heartbeat, inbox prefix). */
  transport?: ConnectNatsOptions;
  /** Called on each instance that joins or leaves, and on each retried call. */
  onEvent?: (event: NatsPoolEvent) => void;
}

/**
 * What {@linkcode NatsServicePoolOptions.onEvent} is told.
 *
 * @example
 * ```ts
 * import type { NatsPoolEvent } from "@conduit/ipc/workers/nats";
 * import assert from "node:assert/strict";
 *
 * const event: NatsPoolEvent = { type: "joined", instance: "a" };
 * assert.equal(event.type, "joined");
 * ```
 */
export type NatsPoolEvent =
  | { type: "joined"; instance: string }
  | {
    type: "left";
    instance: string;
    /** `closed`: it announced its end; `failed`: its connections failed. */
    reason: "closed" | "failed";
    error?: unknown;
  }
  | { type: "retry"; instance: string; method: string; attempt: number; error: unknown };

/**
 * What a pool is doing, and has done: {@linkcode NatsServicePool.stats}.
 *
 * @example
 * ```ts
 * import type { NatsServicePoolStats } from "@conduit/ipc/workers/nats";
 * import assert from "node:assert/strict";
 *
 * const idle: NatsServicePoolStats = {
 *   instances: 3, connections: 3, inFlight: 0, queued: 0,
 *   completed: 10, failed: 0, retried: 0, joined: 3, left: 0,
 * };
 * assert.equal(idle.inFlight + idle.queued, 0);
 * ```
 */
export interface NatsServicePoolStats {
  /** Instances with at least one open connection. */
  instances: number;
  /** Open connections. */
  connections: number;
  /** Calls running on an instance. */
  inFlight: number;
  /** Calls waiting for a connection. */
  queued: number;
  /** Calls that finished with a result (streams: that ended). */
  completed: number;
  /** Calls that failed, for whatever reason. */
  failed: number;
  /** Calls run again after their connection died. */
  retried: number;
  /** Instances that joined (again, after leaving, counts again). */
  joined: number;
  /** Instances that left or failed. */
  left: number;
}

/**
 * One instance as the pool sees it: {@linkcode NatsServicePool.instances}.
 *
 * @example
 * ```ts
 * import type { NatsInstanceStats } from "@conduit/ipc/workers/nats";
 * import assert from "node:assert/strict";
 *
 * const a: NatsInstanceStats = { instance: "a", connections: 1, inFlight: 2, completed: 40 };
 * assert.equal(a.instance, "a");
 * ```
 */
export interface NatsInstanceStats {
  /** Its id (`ListenNatsOptions.instance`). */
  instance: string;
  /** Open connections to it. */
  connections: number;
  /** Calls running on it. */
  inFlight: number;
  /** Calls it answered. */
  completed: number;
}

/** An instance the pool knows. */
class Member {
  readonly id: string;
  readonly subject: string;
  readonly conns: Conn[] = [];
  dialing = 0;
  completed = 0;
  joined = false;
  /** It announced its end: no new calls, its connections close once idle. */
  leaving = false;

  constructor(instance: Instance) {
    this.id = instance.instance;
    this.subject = instance.subject;
  }
}

/** One channel to an instance. */
class Conn {
  readonly channel: Channel<Record<string, never>>;
  readonly member: Member;
  inFlight = 0;
  alive = true;

  constructor(channel: Channel<Record<string, never>>, member: Member) {
    this.channel = channel;
    this.member = member;
  }
}

type RemoteFunctions = Record<string, (param: unknown, options?: CallOptions) => InnerCall>;

/**
 * Calls the instances of a NATS service through one typed `remote`, spread by load.
 *
 * The pool finds the instances of `subject` (every `listenNats` listener on it that is
 * discoverable, the default) and opens `connectionsPerInstance` channels to each. A call goes
 * to the open connection with the fewest calls in flight (up to `concurrency` each); when all
 * are busy, or no instance is there yet, it waits in a queue of at most `maxQueued` calls, and
 * a queued call's `timeout` and `signal` still apply. An instance that starts is used within
 * `discoveryInterval` (usually at once, from its announcement); one that closes its listener
 * gets no new calls and its connections close once their calls finished; one whose
 * connections fail (its process died, its host is unreachable: noticed within the transport's
 * heartbeat) is dropped, and its calls fail with `ConnectionClosedError`, or run again on
 * another instance when their method is in `retryable`.
 *
 * When the NATS connection `nc` closes, waiting and new calls fail with
 * `TransportClosedError` (calls in flight fail with their connections); close the pool then.
 *
 * As with `WorkerPool`, a call is dispatched in a microtask after it is made: iterate a stream
 * call in the same tick you make it.
 *
 * @typeParam Api The handler interface the instances serve.
 * @typeParam Local The handler object this side serves to each instance (call-backs).
 *
 * @example Counting the calls each instance answered
 * ```ts ignore
 * import { connect } from "npm:@nats-io/transport-node@3.4.0";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { NatsServicePool } from "@conduit/ipc/workers/nats";
 * import assert from "node:assert/strict";
 *
 * type Api = { work(n: number): number };
 * const nc = await connect({ servers: "127.0.0.1:4222" });
 * const pool = new NatsServicePool<Api>(nc, "jobs", { codec: jsonCodec(), retryable: ["work"] });
 * await pool.waitForInstances(2);
 * await Promise.all(Array.from({ length: 100 }, (_, n) => pool.remote.work(n)));
 * const answered = pool.instances.reduce((sum, i) => sum + i.completed, 0);
 * assert.equal(answered, 100);
 * await pool.close();
 * await nc.close();
 * ```
 */
export class NatsServicePool<Api extends object, Local extends CheckedHandlers<Local> = object>
  implements AsyncDisposable {
  /** The service's methods; see the class description for how calls are dispatched. */
  readonly remote: RemoteOf<Api>;
  /** The service subject. */
  readonly subject: string;
  readonly #nc: NatsClient;
  readonly #channelOptions: ChannelOptions<Local>;
  readonly #transportOptions: ConnectNatsOptions;
  readonly #limits: {
    connections: number;
    concurrency: number;
    maxQueued: number;
    maxAttempts: number;
    retryable: ReadonlySet<string>;
  };
  readonly #onEvent: ((event: NatsPoolEvent) => void) | undefined;
  readonly #members = new Map<string, Member>();
  readonly #queue = new CallQueue<PoolCall>();
  /** The calls in the queue (a retried call is there again after its first dispatch). */
  readonly #waiting = new WeakSet<PoolCall>();
  readonly #counts = { inFlight: 0, completed: 0, failed: 0, retried: 0, joined: 0, left: 0 };
  readonly #instanceWaiters: Array<{ count: number; waiter: PromiseWithResolvers<void> }> = [];
  /** Dials and channel closes under way, awaited by close(). */
  readonly #pending = new Set<Promise<unknown>>();
  readonly #watcher: DiscoveryWatcher;
  #pumpScheduled = false;
  #rotate = 0;
  #closing: Promise<void> | undefined;
  /** Set once the NATS connection closed: the pool cannot reach any instance again. */
  #failure: Error | undefined;

  /**
   * Creates the pool and starts looking for instances.
   *
   * @param nc An open NATS connection (yours: the pool never closes it).
   * @param subject The subject the service's listeners listen on.
   * @param options The pool's limits and retry policy, and the channels' codec and options.
   * @throws {RangeError} When a limit or interval is out of range.
   */
  constructor(nc: NatsClient, subject: string, options: NatsServicePoolOptions<Api, Local>) {
    const {
      connectionsPerInstance = DEFAULT_NATS_POOL_CONNECTIONS,
      concurrency = DEFAULT_NATS_POOL_CONCURRENCY,
      maxQueued = DEFAULT_POOL_MAX_QUEUED,
      retryable = [],
      maxAttempts = DEFAULT_NATS_POOL_MAX_ATTEMPTS,
      discoveryInterval = DEFAULT_DISCOVERY_INTERVAL,
      transport = {},
      onEvent,
      ...channelOptions
    } = options;
    this.#limits = {
      connections: integerOption("connectionsPerInstance", connectionsPerInstance, 1),
      concurrency: integerOption("concurrency", concurrency, 1),
      maxQueued: integerOption("maxQueued", maxQueued, 0),
      maxAttempts: integerOption("maxAttempts", maxAttempts, 1),
      retryable: new Set(retryable),
    };
    positiveOption("discoveryInterval", discoveryInterval);
    this.#nc = nc;
    this.subject = subject;
    this.#channelOptions = channelOptions;
    this.#transportOptions = transport;
    this.#onEvent = onEvent;
    this.remote = remoteProxy<Api>((method, param, callOptions) =>
      this.#call(method, param, callOptions)
    );
    this.#watcher = new DiscoveryWatcher(nc, subject, {
      interval: discoveryInterval,
      inboxPrefix: transport.inboxPrefix ?? "_INBOX",
    }, {
      found: (instance) => this.#found(instance),
      gone: (instance) => this.#gone(instance.instance),
    });
    void nc.closed().then((reason) => {
      if (this.#closing) return;
      this.#failure = new TransportClosedError(
        `The pool's NATS connection closed${
          reason instanceof Error ? `: ${reason.message}` : ""
        }: cannot reach ${subject}`,
        { cause: reason },
      );
      for (const call of this.#queue.clear()) {
        this.#counts.failed++;
        call.fail(this.#failure);
      }
      for (const { waiter } of this.#instanceWaiters.splice(0)) waiter.reject(this.#failure);
    });
  }

  /** The pool's counters at this moment; see {@linkcode NatsServicePoolStats}. */
  get stats(): NatsServicePoolStats {
    let instances = 0;
    let connections = 0;
    for (const member of this.#members.values()) {
      if (member.conns.length > 0) instances++;
      connections += member.conns.length;
    }
    return { instances, connections, queued: this.#queue.waiting, ...this.#counts };
  }

  /** The instances with an open connection, by id; see {@linkcode NatsInstanceStats}. */
  get instances(): NatsInstanceStats[] {
    return [...this.#members.values()].filter((m) => m.conns.length > 0).map((m) => ({
      instance: m.id,
      connections: m.conns.length,
      inFlight: m.conns.reduce((sum, conn) => sum + conn.inFlight, 0),
      completed: m.completed,
    })).sort((a, b) => a.instance < b.instance ? -1 : 1);
  }

  /**
   * Resolves once the pool has connections to at least `count` instances (calls made
   * before wait in the queue anyway).
   *
   * @param count How many instances to wait for.
   * @returns A promise that rejects with `PoolClosedError` if the pool closes first.
   */
  waitForInstances(count = 1): Promise<void> {
    if (this.#closing) return Promise.reject(new PoolClosedError("The pool is closed"));
    if (this.#failure) return Promise.reject(this.#failure);
    if (this.#usable() >= count) return Promise.resolve();
    const waiter = Promise.withResolvers<void>();
    this.#instanceWaiters.push({ count, waiter });
    return waiter.promise;
  }

  /**
   * Closes the pool: queued calls and new ones fail with `PoolClosedError`, calls in flight
   * finish (each channel's `drainTimeout` bounds the wait), then every connection closes.
   * Never rejects; leaves the NATS connection open.
   *
   * @returns A promise that resolves once every connection is closed.
   */
  close(): Promise<void> {
    return this.#closing ??= this.#close();
  }

  /** Closes the pool (`await using pool = …`). */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  // ---------------------------------------------------------------- calls

  #call(method: string, param: unknown, options: CallOptions | undefined): PoolCall {
    const call = new PoolCall(method, param, options);
    let refusal: Error | undefined;
    if (this.#closing) refusal = new PoolClosedError(`The pool is closed: cannot call "${method}"`);
    else if (this.#failure) refusal = this.#failure;
    else if (!this.#hasRoom()) refusal = new PoolQueueFullError(this.#limits.maxQueued);
    const signal = options?.signal;
    if (refusal !== undefined || signal?.aborted) {
      this.#counts.failed++;
      call.fail(refusal ?? signal!.reason);
      return call;
    }
    this.#enqueue(call, false);
    return call;
  }

  /** Queues `call` (at the front: a retry); while it waits, its signal and deadline apply. */
  #enqueue(call: PoolCall, front: boolean): void {
    const { method, options } = call;
    const signal = options?.signal;
    const onAbort = () => this.#dropQueued(call, signal!.reason);
    signal?.addEventListener("abort", onAbort, { once: true });
    const remaining = call.remainingTime();
    const timer = remaining === Infinity ? undefined : setTimeout(
      () => this.#dropQueued(call, new DeadlineExceededError(method, options!.timeout!)),
      remaining,
    );
    call.unlisten = () => {
      signal?.removeEventListener("abort", onAbort);
      clearTimeout(timer);
    };
    this.#waiting.add(call);
    if (front) this.#queue.pushFront(call);
    else this.#queue.push(call);
    this.#schedulePump();
  }

  #schedulePump(): void {
    if (this.#pumpScheduled) return;
    this.#pumpScheduled = true;
    queueMicrotask(() => {
      this.#pumpScheduled = false;
      this.#pump();
    });
  }

  #pump(): void {
    for (let call = this.#queue.peek(); call !== undefined; call = this.#queue.peek()) {
      const conn = this.#leastLoaded();
      if (conn === undefined) break;
      this.#queue.take();
      this.#waiting.delete(call);
      this.#dispatch(call, conn);
    }
    this.#queue.compact();
  }

  #leastLoaded(): Conn | undefined {
    const conns: Conn[] = [];
    for (const member of this.#members.values()) {
      if (!member.leaving) conns.push(...member.conns);
    }
    const n = conns.length;
    // Start the scan at a rotating position so that ties spread over the instances.
    const offset = this.#rotate++ % Math.max(1, n);
    let best: Conn | undefined;
    for (let i = 0; i < n; i++) {
      const conn = conns[(offset + i) % n];
      if (conn.inFlight >= this.#limits.concurrency) continue;
      if (best === undefined || conn.inFlight < best.inFlight) best = conn;
      if (best.inFlight === 0) break;
    }
    return best;
  }

  #dispatch(call: PoolCall, conn: Conn): void {
    call.unlisten?.();
    call.unlisten = undefined;
    conn.inFlight++;
    this.#counts.inFlight++;
    call.attempts++;
    const remaining = call.remainingTime();
    const options = remaining === Infinity ? call.options : { ...call.options, timeout: remaining };
    const remote = conn.channel.remote as unknown as RemoteFunctions;
    const inner = remote[call.method](call.param, options);
    call.run(inner, (ok, error) => this.#finished(call, conn, ok, error));
  }

  /** A call left its connection: count it, retry it or let it settle; returns whether retried. */
  #finished(call: PoolCall, conn: Conn, ok: boolean, error: unknown): boolean {
    conn.inFlight--;
    this.#counts.inFlight--;
    let retry = false;
    if (ok) {
      this.#counts.completed++;
      conn.member.completed++;
    } else {
      const connectionDied = error instanceof ConnectionClosedError && !this.#closing;
      // Take the connection out now, so the retry cannot land on it again.
      if (connectionDied) this.#lost(conn, error);
      retry = connectionDied && !call.streaming && this.#limits.retryable.has(call.method) &&
        call.attempts < this.#limits.maxAttempts && call.remainingTime() > 0 &&
        this.#failure === undefined;
      if (retry) {
        this.#counts.retried++;
        this.#emit({
          type: "retry",
          instance: conn.member.id,
          method: call.method,
          attempt: call.attempts + 1,
          error,
        });
        // Ahead of the queue: it was made before anything waiting there.
        this.#enqueue(call, true);
      } else this.#counts.failed++;
    }
    if (conn.member.leaving && conn.inFlight === 0) this.#closeConn(conn);
    this.#schedulePump();
    return retry;
  }

  #dropQueued(call: PoolCall, reason: unknown): void {
    if (call.done || !this.#waiting.delete(call)) return;
    this.#counts.failed++;
    this.#queue.cancelled();
    call.fail(reason);
  }

  #hasRoom(): boolean {
    let free = 0;
    for (const member of this.#members.values()) {
      if (member.leaving) continue;
      for (const conn of member.conns) free += this.#limits.concurrency - conn.inFlight;
    }
    return this.#queue.waiting < this.#limits.maxQueued + free;
  }

  // ---------------------------------------------------------------- instances

  #found(instance: Instance): void {
    if (this.#closing) return;
    let member = this.#members.get(instance.instance);
    if (member === undefined) {
      member = new Member(instance);
      this.#members.set(member.id, member);
    }
    if (member.leaving) return;
    while (member.conns.length + member.dialing < this.#limits.connections) this.#dial(member);
  }

  #dial(member: Member): void {
    member.dialing++;
    this.#track((async () => {
      let channel: Channel<Record<string, never>>;
      try {
        const transport = await connectNats(this.#nc, member.subject, this.#transportOptions);
        channel = await openChannel(transport, this.#channelOptions);
      } catch (error) {
        member.dialing--;
        if (member.conns.length === 0 && member.dialing === 0) this.#drop(member, error);
        return;
      }
      member.dialing--;
      if (this.#closing || member.leaving) {
        await channel.close();
        if (member.conns.length === 0 && member.dialing === 0) this.#drop(member, undefined);
        return;
      }
      const conn = new Conn(channel, member);
      member.conns.push(conn);
      channel.closed.then(() => this.#lost(conn, undefined), (error) => this.#lost(conn, error));
      if (!member.joined) {
        member.joined = true;
        this.#counts.joined++;
        this.#emit({ type: "joined", instance: member.id });
        this.#wakeInstanceWaiters();
      }
      this.#schedulePump();
    })());
  }

  /** The instance announced its end: no new calls; close its connections once idle. */
  #gone(id: string): void {
    const member = this.#members.get(id);
    if (member === undefined || member.leaving) return;
    member.leaving = true;
    for (const conn of [...member.conns]) if (conn.inFlight === 0) this.#closeConn(conn);
    if (member.conns.length === 0 && member.dialing === 0) this.#drop(member, undefined);
  }

  #closeConn(conn: Conn): void {
    this.#track(conn.channel.close());
  }

  /** A connection ended (closed, or failed with `error`). */
  #lost(conn: Conn, error: unknown): void {
    if (!conn.alive) return;
    conn.alive = false;
    const member = conn.member;
    member.conns.splice(member.conns.indexOf(conn), 1);
    // A failed connection may still be open on this side: release it.
    if (error !== undefined) this.#closeConn(conn);
    if (member.conns.length === 0 && member.dialing === 0) this.#drop(member, error);
  }

  /** Forgets an instance with no connection left; a live one comes back at the next probe. */
  #drop(member: Member, error: unknown): void {
    if (this.#members.get(member.id) !== member) return;
    this.#members.delete(member.id);
    if (!member.joined || this.#closing) return;
    this.#counts.left++;
    this.#emit({
      type: "left",
      instance: member.id,
      reason: member.leaving ? "closed" : "failed",
      ...(error === undefined ? {} : { error }),
    });
  }

  #usable(): number {
    let usable = 0;
    for (const member of this.#members.values()) {
      if (!member.leaving && member.conns.length > 0) usable++;
    }
    return usable;
  }

  #wakeInstanceWaiters(): void {
    const usable = this.#usable();
    for (let i = this.#instanceWaiters.length - 1; i >= 0; i--) {
      const { count, waiter } = this.#instanceWaiters[i];
      if (usable >= count) {
        this.#instanceWaiters.splice(i, 1);
        waiter.resolve();
      }
    }
  }

  #emit(event: NatsPoolEvent): void {
    if (this.#onEvent === undefined) return;
    try {
      this.#onEvent(event);
    } catch (error) {
      console.error("conduit: a NatsServicePool onEvent callback threw:", error);
    }
  }

  #track(promise: Promise<unknown>): void {
    const tracked = promise.catch(() => {}).finally(() => this.#pending.delete(tracked));
    this.#pending.add(tracked);
  }

  // ---------------------------------------------------------------- ending

  async #close(): Promise<void> {
    this.#watcher.stop();
    const closed = new PoolClosedError("The pool was closed");
    for (const { waiter } of this.#instanceWaiters.splice(0)) waiter.reject(closed);
    for (const call of this.#queue.clear()) {
      this.#counts.failed++;
      call.fail(closed);
    }
    for (const member of this.#members.values()) {
      for (const conn of member.conns) this.#closeConn(conn);
    }
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }
}
