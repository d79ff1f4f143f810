// An instance of a test service on NATS for the NatsServicePool tests: a listenNats listener
// (discoverable, with an instance id) serving a channel on each connection. Stop it gracefully
// (its listener announces its end, its channels close) or crash it (its NATS connection closes
// under it, without a word to its peers, as when its process dies).

import type { NatsConnection } from "@nats-io/transport-node";
import type { CallContext } from "../channel/call_context.ts";
import { type Channel, openChannel } from "../channel/channel.ts";
import { jsonCodec } from "../codecs/json.ts";
import { listenNats } from "../transports/nats.ts";

/** The methods of the test service. */
export interface TestServiceApi {
  /** Waits `ms`, then answers which instance ran call `n`. */
  work(param: { n: number; ms: number }): { instance: string; n: number };
  /**
   * Like `work`, with an effect that must happen once per call: it is applied once per call key
   * (`ctx.key`) in the `ledger` the instances share, however often the call runs.
   */
  charge(param: { n: number; ms: number }): { instance: string; n: number };
  /** The same, but not marked retryable by the tests. */
  once(param: { n: number; ms: number }): { instance: string; n: number };
  /** Streams 0 to `count - 1`, tagged with the instance. */
  items(count: number): AsyncIterable<string>;
  /** Adds up a stream of numbers from the caller. */
  total(values: AsyncIterable<number>): Promise<{ instance: string; total: number }>;
}

/** What the instances of one test share: per call key, its runs and its effects applied. */
export interface Ledger {
  runs: Map<string, number>;
  effects: Map<string, number>;
}

/** A running instance. */
export interface TestService {
  readonly instance: string;
  /** The call numbers it answered. */
  readonly answered: number[];
  /** Calls of `total` it has started. */
  readonly uploads: { started: number };
  /** Closes its listener (announcing its end), then its channels and NATS connection. */
  stop(): Promise<void>;
  /** Closes its NATS connection at once: its peers see it disappear. */
  crash(): Promise<void>;
  /** Resolves once a crashed instance's channels and handlers are done. */
  settled(): Promise<void>;
}

/** Starts an instance `instance` of the test service on `subject`, on its own connection. */
export async function startTestService(
  nc: NatsConnection,
  subject: string,
  instance: string,
  ledger: Ledger = { runs: new Map(), effects: new Map() },
): Promise<TestService> {
  const listener = await listenNats(nc, subject, { queue: subject, instance, heartbeat: 100 });
  const answered: number[] = [];
  const uploads = { started: 0 };
  const channels: Channel[] = [];
  // Handlers still running (their timers), awaited when the instance stops or crashes.
  const running = new Set<Promise<unknown>>();
  const run = ({ n, ms }: { n: number; ms: number }) => {
    const done = new Promise((resolve) => setTimeout(resolve, ms)).then(() => {
      answered.push(n);
      return { instance, n };
    });
    running.add(done);
    void done.finally(() => running.delete(done));
    return done;
  };
  const handlers = {
    work: run,
    once: run,
    async charge(param: { n: number; ms: number }, ctx: CallContext) {
      // Without a key each run is a new effect, as it would be for a real handler.
      const key = ctx.key ?? `unkeyed:${crypto.randomUUID()}`;
      ledger.runs.set(key, (ledger.runs.get(key) ?? 0) + 1);
      const answer = await run(param);
      // The de-duplication a handler does by key: the effect once, however often it runs.
      if (!ledger.effects.has(key)) ledger.effects.set(key, param.n);
      return answer;
    },
    async *items(count: number) {
      for (let i = 0; i < count; i++) yield `${instance}:${i}`;
    },
    async total(values: AsyncIterable<number>) {
      uploads.started++;
      let total = 0;
      for await (const value of values) total += value;
      return { instance, total };
    },
  };
  const serving = (async () => {
    for await (const transport of listener) {
      openChannel(transport, { codec: jsonCodec(), handlers }).then(
        (channel) => channels.push(channel),
        () => {},
      );
    }
  })();
  return {
    instance,
    answered,
    uploads,
    async stop() {
      await listener.close();
      await serving;
      await Promise.all(channels.map((channel) => channel.close()));
      await Promise.all(running);
      await nc.close();
    },
    async crash() {
      await nc.close();
      await listener.close();
      await serving;
    },
    async settled() {
      await Promise.allSettled(channels.map((channel) => channel.closed));
      await Promise.all(running);
    },
  };
}
