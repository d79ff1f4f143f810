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
import { ConnectionClosedError } from "../channel/errors.ts";
import { TransportClosedError } from "../errors.ts";
import { remoteProxy } from "../channel/_remote.ts";
import type { CallOptions, CheckedHandlers, MethodName } from "../channel/types.ts";
import { DiscoveryWatcher, type Instance } from "../transports/_nats_discovery.ts";
import { connectNats, type ConnectNatsOptions, type NatsClient } from "../transports/nats.ts";
import {
  Dispatcher,
  type InnerCall,
  observed,
  type Target,
  type TargetManager,
} from "./_dispatcher.ts";
import { CallNotReplayableError, PoolClosedError, PoolQueueFullError } from "./errors.ts";
import { DEFAULT_POOL_MAX_QUEUED, type PoolRemoteOf, type StreamSource } from "./worker_pool.ts";

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
export { CallNotReplayableError, ConnectionClosedError, PoolClosedError, PoolQueueFullError };
export type { PoolRemoteOf, StreamSource };

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
   * `maxAttempts` tries in all. Calls read as a stream are never retried, nor those whose
   * stream param was an iterator (the lost attempt consumed it): those fail with
   * `CallNotReplayableError`; pass a function that returns a fresh iterable instead (see
   * `StreamSource`).
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
  /** Whether the pool's NATS connection is down (shared by every member). */
  readonly offline: { now: boolean };

  constructor(instance: Instance, offline: { now: boolean }) {
    this.id = instance.instance;
    this.subject = instance.subject;
    this.offline = offline;
  }
}

/** One channel to an instance. */
class Conn implements Target {
  readonly channel: Channel<Record<string, never>>;
  readonly member: Member;
  inFlight = 0;
  alive = true;

  constructor(channel: Channel<Record<string, never>>, member: Member) {
    this.channel = channel;
    this.member = member;
  }

  get open(): boolean {
    return this.alive && !this.member.leaving && !this.member.offline.now;
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
 * While `nc` is disconnected (nats.js reports it through `status()`), no call is sent: calls
 * wait, within their deadlines, and a retryable call whose channel breaks meanwhile waits for
 * the reconnect without spending an attempt. So connect `nc` with every server of the cluster
 * and `maxReconnectAttempts: -1` (nats.js gives up after 10 attempts by default). When `nc`
 * closes for good, waiting and new calls fail with `TransportClosedError` (calls in flight
 * fail with their connections); close the pool then.
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
  readonly remote: PoolRemoteOf<Api>;
  /** The service subject. */
  readonly subject: string;
  /** How the pool opens channels to an instance, and how many. */
  readonly #dialing: {
    nc: NatsClient;
    channel: ChannelOptions<Local>;
    transport: ConnectNatsOptions;
    connections: number;
  };
  readonly #onEvent: ((event: NatsPoolEvent) => void) | undefined;
  readonly #members = new Map<string, Member>();
  /** Every open connection, to every instance: the dispatcher's targets. */
  readonly #conns: Conn[] = [];
  readonly #dispatcher: Dispatcher<Conn>;
  readonly #counts = { joined: 0, left: 0 };
  readonly #instanceWaiters: Array<{ count: number; waiter: PromiseWithResolvers<void> }> = [];
  /** Dials and channel closes under way, awaited by close(). */
  readonly #pending = new Set<Promise<unknown>>();
  readonly #watcher: DiscoveryWatcher;
  #closing: Promise<void> | undefined;
  /** The NATS connection is down (disconnected, reconnecting): no channel over it is used. */
  readonly #offline = { now: false };
  /** Set once the NATS connection closed: the pool cannot reach any instance again. */
  #failure: Error | undefined;
  /**
   * What close() undoes on the NATS connection: the loop over its status events stops, and its
   * end no longer reaches the pool (see #watchStatus, #watchClosed).
   */
  readonly #unwatch: Array<() => void> = [];

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
    this.#dialing = {
      nc,
      channel: channelOptions,
      transport,
      connections: integerOption("connectionsPerInstance", connectionsPerInstance, 1),
    };
    this.#dispatcher = new Dispatcher(this.#targets(), {
      concurrency: integerOption("concurrency", concurrency, 1),
      maxQueued: integerOption("maxQueued", maxQueued, 0),
      maxAttempts: integerOption("maxAttempts", maxAttempts, 1),
      retryable: new Set(retryable),
    });
    positiveOption("discoveryInterval", discoveryInterval);
    this.subject = subject;
    this.#onEvent = onEvent;
    const dispatcher = this.#dispatcher;
    this.remote = remoteProxy<Api>((method, param, callOptions) =>
      dispatcher.call(method, param, callOptions)
    ) as unknown as PoolRemoteOf<Api>;
    this.#watcher = new DiscoveryWatcher(nc, subject, {
      interval: discoveryInterval,
      inboxPrefix: transport.inboxPrefix ?? "_INBOX",
    }, {
      found: (instance) => this.#found(instance),
      gone: (instance) => this.#gone(instance.instance),
    });
    this.#watchStatus(nc);
    observed(this, "nats", subject, () => this.#closing === undefined);
    this.#watchClosed(nc);
  }

  /** The pool's counters at this moment; see {@linkcode NatsServicePoolStats}. */
  get stats(): NatsServicePoolStats {
    let instances = 0;
    let connections = 0;
    for (const member of this.#members.values()) {
      if (member.conns.length > 0) instances++;
      connections += member.conns.length;
    }
    return {
      instances,
      connections,
      queued: this.#dispatcher.queued,
      ...this.#dispatcher.counts,
      ...this.#counts,
    };
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
    const failure = this.#dispatcher.failure;
    if (failure) return Promise.reject(failure);
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

  // ---------------------------------------------------------------- the dispatcher's targets

  #targets(): TargetManager<Conn> {
    return {
      targets: () => this.#conns,
      startingCapacity: () => 0,
      send: (conn, method, param, options) =>
        (conn.channel.remote as unknown as RemoteFunctions)[method](param, options),
      lost: (conn, error) => {
        if (!(error instanceof ConnectionClosedError) || this.#closing) return false;
        // Take the connection out now, so the retry cannot land on it again.
        this.#lost(conn, error);
        return this.#offline.now ? "unspent" : true;
      },
      released: (conn, ok) => {
        if (ok) conn.member.completed++;
        if (conn.member.leaving && conn.inFlight === 0) this.#closeConn(conn);
      },
      retrying: (conn, call, error) =>
        this.#emit({
          type: "retry",
          instance: conn.member.id,
          method: call.method,
          attempt: call.attempts + 1,
          error,
        }),
    };
  }

  // ---------------------------------------------------------------- instances

  #found(instance: Instance): void {
    if (this.#closing || this.#offline.now) return;
    let member = this.#members.get(instance.instance);
    if (member === undefined) {
      member = new Member(instance, this.#offline);
      this.#members.set(member.id, member);
    }
    if (member.leaving) return;
    while (member.conns.length + member.dialing < this.#dialing.connections) this.#dial(member);
  }

  #dial(member: Member): void {
    member.dialing++;
    this.#track((async () => {
      let channel: Channel<Record<string, never>>;
      try {
        const { nc, transport: options, channel: channelOptions } = this.#dialing;
        const transport = await connectNats(nc, member.subject, options);
        channel = await openChannel(transport, channelOptions);
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
      this.#conns.push(conn);
      channel.closed.then(() => this.#lost(conn, undefined), (error) => this.#lost(conn, error));
      if (!member.joined) {
        member.joined = true;
        this.#counts.joined++;
        this.#emit({ type: "joined", instance: member.id });
        this.#wakeInstanceWaiters();
      }
      this.#dispatcher.schedulePump();
    })());
  }

  /**
   * Follows the NATS connection's status, where the client reports it (nats.js `status()`).
   * While it is down every channel over it is out of use at once: no call is sent on one, and
   * a retryable call whose channel breaks meanwhile waits (within its deadline) for the
   * reconnect without spending an attempt, rather than being retried one channel at a time
   * onto channels that share the dead connection. Channels that outlive a short drop are used
   * again after it; the instances are probed at once to replace those that did not.
   */
  #watchStatus(nc: NatsClient): void {
    const status = (nc as { status?: () => AsyncIterable<{ type: string }> }).status;
    if (typeof status !== "function") return;
    const events = status.call(nc) as AsyncIterable<{ type: string }> & { stop?: () => void };
    // nats.js holds the iterator (and through this loop, the pool) until it stops; a loop that
    // only returned at the next event would keep a closed pool alive while the connection is.
    if (typeof events.stop === "function") this.#unwatch.push(() => events.stop!());
    void (async () => {
      for await (const event of events) {
        if (this.#closing) return;
        if (event.type === "disconnect") this.#offline.now = true;
        else if (event.type === "reconnect") {
          this.#offline.now = false;
          this.#watcher.probe();
          this.#dispatcher.schedulePump();
        }
      }
    })().catch(() => {});
  }

  /**
   * Fails waiting and new calls once the NATS connection closes for good. The reaction stays
   * on `nc.closed()` until then, so it holds the pool only through a link close() cuts: a
   * closed pool is not kept alive by the connection it used.
   */
  #watchClosed(nc: NatsClient): void {
    const link: { pool?: NatsServicePool<Api, Local> } = { pool: this };
    this.#unwatch.push(() => delete link.pool);
    const subject = this.subject;
    void nc.closed().then((reason) => {
      const pool = link.pool;
      if (pool === undefined || pool.#closing) return;
      const failure = new TransportClosedError(
        `The pool's NATS connection closed${
          reason instanceof Error ? `: ${reason.message}` : ""
        }: cannot reach ${subject}`,
        { cause: reason },
      );
      pool.#dispatcher.fail(failure);
      for (const { waiter } of pool.#instanceWaiters.splice(0)) waiter.reject(failure);
    });
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
    this.#conns.splice(this.#conns.indexOf(conn), 1);
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
    for (const unwatch of this.#unwatch.splice(0)) unwatch();
    const closed = new PoolClosedError("The pool was closed");
    for (const { waiter } of this.#instanceWaiters.splice(0)) waiter.reject(closed);
    this.#dispatcher.close();
    this.#dispatcher.failQueued(closed);
    for (const member of this.#members.values()) {
      for (const conn of member.conns) this.#closeConn(conn);
    }
    while (this.#pending.size > 0) await Promise.all([...this.#pending]);
  }
}
