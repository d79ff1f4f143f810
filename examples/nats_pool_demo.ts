/**
 * Scaling out on NATS, with a crash in the middle: starts a nats-server on a random loopback
 * port, three service processes (instances a, b and c of `_nats_service.ts`) and a
 * `NatsServicePool` that counts the primes below 60 million in 1200 calls, 24 at a time.
 * When a quarter of the calls are answered, instance b is killed (SIGKILL) and its calls in
 * flight run again on the others; after half of them a fourth instance, d, is started, joins,
 * and takes its share of the rest. At the end the
 * demo prints the calls each instance answered, the retries, and checks that every range was
 * answered exactly once and the total is right.
 *
 *   deno run -A examples/nats_pool_demo.ts
 *
 * Needs the `nats-server` binary (Debian: `apt-get install nats-server`); without it the demo
 * says so and exits with success.
 *
 * @module
 */

import { connect } from "@nats-io/transport-node";
import { jsonCodec } from "@conduit/ipc/codecs/json";
import { NatsServicePool } from "@conduit/ipc/workers/nats";
import { countPrimes } from "./_primes.ts";
import { type PrimeServiceApi, SUBJECT } from "./_nats_service.ts";
// The repository's helper that starts nats-server on a random loopback port and stops it.
import { haveNatsServer, startNatsServer } from "../transports/_test_nats_server.ts";

const SERVICE = new URL("./_nats_service.ts", import.meta.url).pathname;
const LIMIT = 60_000_000;
const CHUNK = 50_000;
const CALLS = LIMIT / CHUNK;
const IN_FLIGHT = 24;

if (!haveNatsServer) {
  console.log("nats-server is not installed: skipping the NATS pool demo");
  Deno.exit(0);
}

await using server = await startNatsServer();
console.log(`nats-server listening on ${server.url}`);

const services = new Map<string, Deno.ChildProcess>();
await Promise.all(["a", "b", "c"].map(startService));

const started = performance.now();
const log = (line: string) =>
  console.log(`${((performance.now() - started) / 1000).toFixed(2).padStart(6)} s  ${line}`);

const nc = await connect({ servers: server.url });
const pool = new NatsServicePool<PrimeServiceApi>(nc, SUBJECT, {
  codec: jsonCodec(),
  retryable: ["countPrimes"],
  // A killed instance is noticed within one heartbeat (the default is 1 s).
  transport: { heartbeat: 200 },
  onEvent(event) {
    if (event.type === "joined") log(`pool: instance ${event.instance} joined`);
    else if (event.type === "left") {
      // The error's innermost cause says what happened (NatsPeerGoneError: the peer vanished).
      let root = event.error;
      while (root instanceof Error && root.cause instanceof Error) root = root.cause;
      const why = root instanceof Error ? `: ${root.name}` : "";
      log(`pool: instance ${event.instance} left (${event.reason}${why})`);
    } else {
      log(
        `pool: retrying a ${event.method} call that was on ${event.instance} (try ${event.attempt})`,
      );
    }
  },
});
await pool.waitForInstances(3);
log("pool: connected to 3 instances; starting the load");

// The load: the ranges in two halves, 24 calls in flight; each range's answer is kept by its
// index. In the first half instance b is killed; before the second, instance d joins.
const answers: Array<{ instance: string; count: number } | undefined> = new Array(CALLS);
let answered = 0;
let killed = false;
async function load(from: number, to: number): Promise<void> {
  let next = from;
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    for (let i = next++; i < to; i = next++) {
      answers[i] = await pool.remote.countPrimes({ from: i * CHUNK, to: (i + 1) * CHUNK });
      answered++;
      if (!killed && answered >= CALLS / 4) {
        killed = true;
        const b = services.get("b")!;
        b.kill("SIGKILL");
        log(`killed instance b (pid ${b.pid}) with ${answered} of ${CALLS} calls answered`);
      }
    }
  }));
}
await load(0, CALLS / 2);
log(`${CALLS / 2} calls answered; starting instance d`);
await startService("d");
await pool.waitForInstances(3);
await load(CALLS / 2, CALLS);
const seconds = (performance.now() - started) / 1000;
log(`all ${CALLS} calls answered`);

// Nothing lost: every range answered once, and the counts add up.
const perInstance = new Map<string, number>();
let total = 0;
for (const [i, answer] of answers.entries()) {
  if (answer === undefined) throw new Error(`range ${i} was never answered`);
  perInstance.set(answer.instance, (perInstance.get(answer.instance) ?? 0) + 1);
  total += answer.count;
}
const expected = countPrimes({ from: 0, to: LIMIT });
if (total !== expected) throw new Error(`π(${LIMIT}) came out as ${total}, not ${expected}`);

const stats = pool.stats;
console.log("\ninstance  calls answered");
console.log("--------  --------------");
for (const [instance, calls] of [...perInstance].sort()) {
  const note = instance === "b"
    ? "  (killed)"
    : instance === "d"
    ? "  (joined after the kill)"
    : "";
  console.log(`${instance.padEnd(8)}  ${String(calls).padStart(14)}${note}`);
}
console.log(
  `\n${CALLS} of ${CALLS} ranges answered, each once; π(${LIMIT.toLocaleString("en-US")}) = ` +
    `${total.toLocaleString("en-US")} (checked); ${stats.retried} calls retried after the ` +
    `kill, ${stats.failed} failed; ${(CALLS / seconds).toFixed(0)} calls/s`,
);
if (stats.failed !== 0) throw new Error(`${stats.failed} calls failed`);

await pool.close();
await nc.close();
for (const [instance, child] of services) {
  if (instance !== "b") child.kill("SIGTERM");
  await child.status;
}

/** Starts an instance in its own process and waits for its `ready`. */
async function startService(instance: string): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", SERVICE, server.url, instance],
    stdin: "null",
    stdout: "piped",
  }).spawn();
  services.set(instance, child);
  const lines = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let seen = "";
  while (!seen.includes("ready")) {
    const { done, value } = await lines.read();
    if (done) throw new Error(`instance ${instance} exited before it was ready`);
    seen += value;
  }
  // Keep draining its stdout, so that a full pipe never blocks it.
  void (async () => {
    while (!(await lines.read()).done);
  })();
}
