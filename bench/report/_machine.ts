// "Closer to the machine": conduit's raw calls over a Unix socket against a bare Deno Unix
// socket in the same process, both ends in one process (as bench/ab_engine.ts measures):
// - bulk: sequential 1 MiB raw echo calls against a one-way stream of 1 MiB writes, both in
//   bytes moved over the socket per second (a call moves its payload both ways). As the bare
//   stream reads into one buffer, the calls use what an application that wants no copy and no
//   allocation per call uses: the echo returns `transfer(param)` and the caller recycles each
//   result (`Channel.recycle`);
// - small: the p50 of sequential raw calls of 16 bytes against a bare ping-pong of 16 bytes.
// Each round is a fresh process per figure (this module run as a program), in a rotating order.
//
//   deno run -A bench/report/_machine.ts <case> <socket dir>    prints one number

import { openChannel, transfer } from "../../channel/mod.ts";
import { rawCodec } from "../../codecs/raw.ts";
import { connectUnix, listenUnix } from "../../transports/unix.ts";
import { loadAverage } from "./_env.ts";
import { roundsLine, spreadOf, time, times } from "./_format.ts";
import { freshRounds, sequential } from "./_measure.ts";
import { type Spread, spread } from "./_stats.ts";

const CASES = ["conduit-bulk", "bare-bulk", "conduit-small", "bare-small"] as const;
type Case = typeof CASES[number];
const MIB = 1024 * 1024;
const SMALL_BYTES = 16;

/** Per case, the figure of each round; and the paired ratios. */
export interface MachineResult {
  rounds: number;
  /** When the section ran, and the 1-, 5- and 15-minute load averages before it. */
  date: string;
  load: string;
  /** MB/s moved for the bulk cases, µs p50 for the small ones. */
  figures: Record<Case, number[]>;
  /** conduit bulk ÷ bare bulk, per round (target ≥ 0.6). */
  bulkRatio: Spread | undefined;
  /** conduit small p50 ÷ bare p50, per round (target ≤ 1.3). */
  smallRatio: Spread | undefined;
}

/** Runs `rounds` rounds of the four cases, each a fresh process. */
export async function runMachine(
  rounds: number,
  scale: number,
  socketDir: string,
  log: (line: string) => void,
): Promise<MachineResult> {
  const date = new Date().toISOString();
  const load = loadAverage();
  const figures = await freshRounds<Case, number>(
    import.meta.filename!,
    CASES,
    [socketDir, String(scale)],
    rounds,
    log,
  );
  const ratio = (a: Case, b: Case) => spread(figures[a].map((value, i) => value / figures[b][i]));
  return {
    rounds,
    date,
    load,
    figures,
    bulkRatio: ratio("conduit-bulk", "bare-bulk"),
    smallRatio: ratio("conduit-small", "bare-small"),
  };
}

/** The section's Markdown lines. */
export function machineMarkdown(result: MachineResult | undefined): string[] {
  const out = ["## Closer to the machine", ""];
  if (result === undefined) return [...out, "Not measured in this run.", ""];
  const f = result.figures;
  const mb = (values: number[]) => spreadOf(spread(values), (x) => `${Math.round(x)} MB/s`);
  const us = (values: number[]) => spreadOf(spread(values), (x) => time(x / 1000));
  out.push(
    "conduit's raw codec over a Unix socket against a bare Deno Unix socket, both ends in one " +
      `process. ${roundsLine(result)}`,
    "",
    "| case | conduit | bare Deno socket | ratio | target |",
    "| --- | --- | --- | --- | --- |",
    `| 1 MiB raw calls vs a stream | ${mb(f["conduit-bulk"])} | ${mb(f["bare-bulk"])} | ${
      spreadOf(result.bulkRatio, times)
    } | ≥ 0.60× |`,
    `| 16 B raw calls vs ping-pong, p50 | ${us(f["conduit-small"])} | ${us(f["bare-small"])} | ${
      spreadOf(result.smallRatio, times)
    } | ≤ 1.30× |`,
    "",
  );
  return out;
}

async function socketPair(socketDir: string): Promise<[Deno.UnixConn, Deno.UnixConn]> {
  const path = `${socketDir}/m${Deno.pid}.sock`;
  const listener = Deno.listen({ transport: "unix", path });
  const [server, client] = await Promise.all([
    listener.accept(),
    Deno.connect({ transport: "unix", path }),
  ]);
  listener.close();
  await Deno.remove(path).catch(() => {}); // close() may have removed it
  return [server as Deno.UnixConn, client];
}

async function measure(name: Case, socketDir: string, scale: number): Promise<number> {
  if (name === "bare-bulk") {
    const [a, b] = await socketPair(socketDir);
    const total = Math.ceil(1024 * scale);
    const chunk = new Uint8Array(MIB).fill(3);
    const sink = new Uint8Array(256 * 1024);
    const run = async (mib: number) => {
      const writing = (async () => {
        for (let i = 0; i < mib; i++) {
          for (let at = 0; at < MIB;) at += await a.write(chunk.subarray(at));
        }
      })();
      let read = 0;
      while (read < mib * MIB) read += (await b.read(sink)) ?? Infinity;
      await writing;
    };
    await run(64);
    const start = performance.now();
    await run(total);
    const mbps = total * MIB / 1e6 / ((performance.now() - start) / 1000);
    a.close();
    b.close();
    return mbps;
  }
  if (name === "bare-small") {
    const [a, b] = await socketPair(socketDir);
    const message = new Uint8Array(SMALL_BYTES).fill(7);
    const buffer = new Uint8Array(SMALL_BYTES);
    const echo = (async () => {
      const own = new Uint8Array(SMALL_BYTES);
      for (;;) {
        let got = 0;
        while (got < SMALL_BYTES) {
          const n = await b.read(own.subarray(got));
          if (n === null) return;
          got += n;
        }
        await b.write(own);
      }
    })();
    const p50 = await p50Micros(async () => {
      await a.write(message);
      let got = 0;
      while (got < SMALL_BYTES) got += (await a.read(buffer.subarray(got)))!;
    }, scale);
    a.close();
    await echo.catch(() => {});
    b.close();
    return p50;
  }
  const path = `${socketDir}/c${Deno.pid}.sock`;
  const listener = await listenUnix(path);
  const [server, client] = await Promise.all([listener.accept(), connectUnix(path)]);
  await listener.close();
  const [serving, calling] = await Promise.all([
    openChannel(server, {
      codec: rawCodec(),
      handlers: {
        echo: (value: Uint8Array) => name === "conduit-bulk" ? transfer(value) : value,
      },
    }),
    openChannel<{ echo(value: Uint8Array): Uint8Array }>(client, { codec: rawCodec() }),
  ]);
  try {
    if (name === "conduit-bulk") {
      const blob = new Uint8Array(MIB).fill(3);
      const call = async () => void calling.recycle(await calling.remote.echo(blob));
      for (let i = 0; i < 32; i++) await call();
      const calls = Math.ceil(512 * scale);
      const start = performance.now();
      for (let i = 0; i < calls; i++) await call();
      return 2 * calls * MIB / 1e6 / ((performance.now() - start) / 1000);
    }
    const message = new Uint8Array(SMALL_BYTES).fill(7);
    return await p50Micros(() => calling.remote.echo(message), scale);
  } finally {
    await Promise.all([calling.close(), serving.close()]);
  }
}

/** The p50 of 10,000 × `scale` timed calls after 2,000 untimed ones, in µs. */
async function p50Micros(call: () => Promise<unknown>, scale: number): Promise<number> {
  for (let i = 0; i < 2000; i++) await call();
  return (await sequential(call, Math.ceil(10_000 * scale))).percentiles[0]! * 1000;
}

if (import.meta.main) {
  const [name, socketDir, scale] = Deno.args;
  if (!CASES.includes(name as Case)) throw new TypeError(`unknown case ${name}`);
  console.log(await measure(name as Case, socketDir, Number(scale ?? 1)));
}
