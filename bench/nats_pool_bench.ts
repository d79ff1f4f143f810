// What the NatsServicePool's dispatch costs against a single channel over NATS, in the same
// run with interleaved rounds: small JSON calls with 256 in flight, the instances' listeners in
// this process (each on its own NATS connection), a real nats-server in another.
//
//   deno run -A bench/nats_pool_bench.ts [rounds=3]
//
// Cases: one channel over connectNats (the baseline), a pool over one instance, a pool over
// three instances. All ends share this process's CPU, so three instances show the pool's cost
// of spreading, not a speed-up: that needs instances on other cores or hosts. Prints one
// Markdown table of medians over the rounds.

import { jsonCodec } from "../codecs/json.ts";
import { type Channel, openChannel } from "../channel/channel.ts";
import { connectNats, listenNats, type NatsListener } from "../transports/nats.ts";
import { type NatsServer, startNatsServer } from "../transports/_test_nats_server.ts";
import { NatsServicePool } from "../workers/nats_service_pool.ts";

const ROUNDS = Number(Deno.args[0] ?? 3);
const CALLS = 50_000;
const IN_FLIGHT = 256;
const SMALL = { id: 42, name: "conduit", tags: ["bench", "small", "call"] };

interface Api {
  echo(value: typeof SMALL): typeof SMALL;
}

type Case = "one channel" | "pool, 1 instance" | "pool, 3 instances";
const CASES: Case[] = ["one channel", "pool, 1 instance", "pool, 3 instances"];

/** Starts `count` instances of the echo service on `subject`. */
async function instances(nats: NatsServer, subject: string, count: number) {
  const listeners: NatsListener[] = [];
  const channels: Channel[] = [];
  const serving: Promise<void>[] = [];
  for (let i = 0; i < count; i++) {
    const listener = await listenNats(await nats.connect(), subject, {
      queue: subject,
      instance: `i${i}`,
    });
    listeners.push(listener);
    serving.push((async () => {
      for await (const transport of listener) {
        channels.push(
          await openChannel(transport, {
            codec: jsonCodec(),
            handlers: { echo: (v: unknown) => v },
          }),
        );
      }
    })());
  }
  return async () => {
    await Promise.all(listeners.map((listener) => listener.close()));
    await Promise.all(serving);
    await Promise.all(channels.map((channel) => channel.close()));
  };
}

/** Calls/s of `CALLS` echo calls, `IN_FLIGHT` at a time. */
async function callsPerSecond(echo: (value: typeof SMALL) => Promise<unknown>): Promise<number> {
  for (let i = 0; i < 2_000; i++) await echo(SMALL);
  let started = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (started++ < CALLS) await echo(SMALL);
  }));
  return CALLS / ((performance.now() - start) / 1000);
}

async function run(which: Case, nats: NatsServer, round: number): Promise<number> {
  const subject = `bench.${round}.${which.replaceAll(/[^a-z0-9]/g, "")}`;
  const stop = await instances(nats, subject, which === "pool, 3 instances" ? 3 : 1);
  const nc = await nats.connect();
  try {
    if (which === "one channel") {
      const channel = await openChannel<Api>(await connectNats(nc, subject), {
        codec: jsonCodec(),
      });
      const figure = await callsPerSecond((value) => channel.remote.echo(value));
      await channel.close();
      return figure;
    }
    const pool = new NatsServicePool<Api>(nc, subject, {
      codec: jsonCodec(),
      concurrency: IN_FLIGHT,
    });
    await pool.waitForInstances(which === "pool, 3 instances" ? 3 : 1);
    const figure = await callsPerSecond((value) => pool.remote.echo(value));
    await pool.close();
    return figure;
  } finally {
    await stop();
    await nc.close();
  }
}

const nats = await startNatsServer();
const results = new Map<Case, number[]>(CASES.map((c) => [c, []]));
try {
  for (let r = 0; r < ROUNDS; r++) {
    const order = r % 2 === 0 ? CASES : [...CASES].reverse();
    for (const which of order) {
      const figure = await run(which, nats, r);
      results.get(which)!.push(figure);
      console.error(`round ${r + 1} ${which}: ${figure.toFixed(0)} calls/s`);
    }
  }
} finally {
  await nats.stop();
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1];
const baseline = median(results.get("one channel")!);
console.log(`| case | calls/s, ${IN_FLIGHT} in flight (median of ${ROUNDS}) | vs one channel |`);
console.log("| --- | --- | --- |");
for (const which of CASES) {
  const m = median(results.get(which)!);
  console.log(
    `| ${which} | ${Math.round(m).toLocaleString("en-US")} | ${(m / baseline).toFixed(2)}× |`,
  );
}
