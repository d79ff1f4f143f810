// The measurements, each over any EchoClient: sequential round trips (latency samples),
// round trips with a fixed number in flight (calls/s), and one-way messages (messages/s); and
// how the report runs a measurement in a fresh process.

import type { EchoClient } from "./_clients.ts";
import { type LatencySummary, summarize } from "./_stats.ts";

/** Mean time of one `call`, in ms, over at least `minCalls` calls and about `budgetMs`. */
export async function estimate(
  call: () => Promise<unknown>,
  budgetMs: number,
  minCalls: number,
): Promise<number> {
  const start = performance.now();
  let calls = 0;
  let elapsed = 0;
  while (calls < minCalls || elapsed < budgetMs) {
    await call();
    calls++;
    elapsed = performance.now() - start;
  }
  return elapsed / calls;
}

/** `n` round trips one after the other; each sample is one round trip, in ms. */
export async function sequential(
  call: () => Promise<unknown>,
  n: number,
): Promise<LatencySummary> {
  const samples = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const start = performance.now();
    await call();
    samples[i] = performance.now() - start;
  }
  return summarize(samples);
}

/** `total` round trips with `inFlight` of them outstanding at any time; calls per second. */
export async function callsPerSecond(
  call: () => Promise<unknown>,
  inFlight: number,
  total: number,
): Promise<number> {
  let started = 0;
  const lane = async () => {
    while (started < total) {
      started++;
      await call();
    }
  };
  const start = performance.now();
  await Promise.all(Array.from({ length: inFlight }, lane));
  return total / ((performance.now() - start) / 1000);
}

/**
 * `total` one-way messages; messages per second, from the first send to the peer's count
 * confirming the last. Every `window` messages the peer is asked for its count and the
 * sender waits for the answer before last, so at most two windows are queued (conduit's
 * `notify` has no backpressure of its own).
 *
 * @throws {Error} When the peer did not count every message.
 */
export async function notesPerSecond(
  client: EchoClient,
  value: unknown,
  total: number,
  window: number,
): Promise<number> {
  const before = await client.noted();
  const acks: Promise<number>[] = [];
  const start = performance.now();
  for (let sent = 0; sent < total;) {
    const batch = Math.min(window, total - sent);
    for (let i = 0; i < batch; i++) client.note(value);
    sent += batch;
    acks.push(client.noted());
    if (acks.length > 2) await acks.shift();
  }
  const counted = (await Promise.all(acks)).at(-1)!;
  const seconds = (performance.now() - start) / 1000;
  if (counted - before !== total) {
    throw new Error(`The peer counted ${counted - before} of ${total} one-way messages`);
  }
  return total / seconds;
}

/** The peak and current resident set size of process `pid`, in bytes (Linux `/proc`). */
export function rssOf(pid: number | "self"): { peak: number; current: number } | undefined {
  try {
    const status = Deno.readTextFileSync(`/proc/${pid}/status`);
    const kb = (field: string) => Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(status)?.[1]);
    return { peak: kb("VmHWM") * 1024, current: kb("VmRSS") * 1024 };
  } catch {
    return undefined;
  }
}

/** Resets the peak RSS of process `pid` to its current RSS (Linux 4.0+); false if refused. */
export function resetPeakRss(pid: number | "self"): boolean {
  try {
    Deno.writeTextFileSync(`/proc/${pid}/clear_refs`, "5");
    return true;
  } catch {
    return false;
  }
}

/**
 * Runs `attempt`, and once more if it throws (a peer that died on a shared, busy machine
 * should not void a quarter hour of measurements); a second failure is thrown.
 */
export async function retryOnce<T>(
  label: string,
  attempt: () => Promise<T>,
  log: (line: string) => void,
): Promise<T> {
  try {
    return await attempt();
  } catch (error) {
    log(`${label} failed, retrying once with a fresh peer: ${error}`);
    return await attempt();
  }
}

/**
 * Runs `deno run -A <module> ...args` as a fresh process, with `env` added to this one's; its
 * stdout, parsed as JSON.
 */
export async function runFresh<T>(
  module: string,
  args: string[],
  env: Record<string, string> = {},
  flags: string[] = [],
): Promise<T> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", ...flags, module, ...args],
    env,
    stdin: "null",
    stderr: "inherit",
  }).output();
  if (!output.success) {
    throw new Error(`${module} ${args.join(" ")} exited with code ${output.code}`);
  }
  return JSON.parse(new TextDecoder().decode(output.stdout));
}

/**
 * Runs every case once per round, each as a fresh process of `module` (`<case> ...args`, with
 * `envOf(case)` in its environment), the order rotating by a case each round; what each
 * printed, per case, in round order.
 */
export async function freshRounds<C extends string, T>(
  module: string,
  cases: readonly C[],
  args: string[],
  rounds: number,
  log: (line: string) => void,
  envOf: (name: C) => Record<string, string> = () => ({}),
): Promise<Record<C, T[]>> {
  const figures = Object.fromEntries(cases.map((name) => [name, []])) as unknown as Record<C, T[]>;
  for (let round = 0; round < rounds; round++) {
    log(`${module.split("/").at(-1)} round ${round + 1}/${rounds}`);
    for (const name of rotated(cases, round)) {
      figures[name].push(await runFresh<T>(module, [name, ...args], envOf(name)));
    }
  }
  return figures;
}

/** `list` rotated left by `by`: no item always runs first. */
export function rotated<T>(list: readonly T[], by: number): T[] {
  return list.map((_, i) => list[(i + by) % list.length]);
}
