// What a reader costs the writer on a Unix socket in Deno, against TCP: a bare ping-pong of
// 870-byte messages between two Deno processes whose echoing child works `--work` µs on each
// message before answering, counting the context switches of both processes per round trip
// (/proc/<pid>/task/*/status). Over a Unix socket the child's read of a message wakes the
// parent (Deno registers the socket for writability, edge-triggered, and the kernel signals
// write space each time the peer reads), so a parent that went to sleep waiting for the answer
// wakes twice per round trip once the child takes long enough; TCP signals write space only to
// a writer that ran out of it. No conduit code runs here: it bounds every Deno peer.
//
//   deno run -A bench/socket_wakeups.ts [--rounds 3]

import { parseArgs } from "node:util";

const args = parseArgs({
  args: Deno.args,
  options: {
    rounds: { type: "string", default: "3" },
    child: { type: "string" },
    work: { type: "string", default: "0" },
  },
}).values;

const MESSAGE_BYTES = 870;
const ROUND_TRIPS = 5000;

if (args.child !== undefined) {
  const address: Deno.ConnectOptions | Deno.UnixConnectOptions = args.child.startsWith("/")
    ? { transport: "unix", path: args.child }
    : { hostname: "127.0.0.1", port: Number(args.child) };
  const conn = await Deno.connect(address as Deno.ConnectOptions);
  const buffer = new Uint8Array(4096);
  const work = Number(args.work) / 1000;
  for (;;) {
    const n = await conn.read(buffer);
    if (n === null) break;
    const until = performance.now() + work;
    while (performance.now() < until) {
      // Busy, as a handler decoding and answering would be.
    }
    await conn.write(buffer.subarray(0, n));
  }
  Deno.exit(0);
}

/** Context switches so far of all of `pid`'s threads. */
function switches(pid: number): number {
  let total = 0;
  for (const task of Deno.readDirSync(`/proc/${pid}/task`)) {
    try {
      const status = Deno.readTextFileSync(`/proc/${pid}/task/${task.name}/status`);
      for (const match of status.matchAll(/^(?:non)?voluntary_ctxt_switches:\s+(\d+)$/gm)) {
        total += Number(match[1]);
      }
    } catch {
      // The thread ended meanwhile.
    }
  }
  return total;
}

async function pingPong(transport: "unix" | "tcp", workMicros: number) {
  const dir = await Deno.makeTempDir({ prefix: "wk" });
  const listener = transport === "unix"
    ? Deno.listen({ transport: "unix", path: `${dir}/s` })
    : Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const address = transport === "unix" ? `${dir}/s` : String((listener.addr as Deno.NetAddr).port);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", import.meta.filename!, "--child", address, "--work", String(workMicros)],
  }).spawn();
  const conn = await listener.accept();
  const message = new Uint8Array(MESSAGE_BYTES);
  const buffer = new Uint8Array(4096);
  const roundTrip = async () => {
    await conn.write(message);
    for (let got = 0; got < MESSAGE_BYTES;) got += (await conn.read(buffer))!;
  };
  for (let i = 0; i < 2000; i++) await roundTrip();
  const before = [switches(Deno.pid), switches(child.pid)];
  const started = performance.now();
  for (let i = 0; i < ROUND_TRIPS; i++) await roundTrip();
  const micros = (performance.now() - started) * 1000 / ROUND_TRIPS;
  const parent = (switches(Deno.pid) - before[0]) / ROUND_TRIPS;
  const peer = (switches(child.pid) - before[1]) / ROUND_TRIPS;
  conn.close();
  listener.close();
  await child.status;
  await Deno.remove(dir, { recursive: true });
  return { micros, parent, peer };
}

console.log(
  `bare Deno ping-pong, ${MESSAGE_BYTES} B, ${ROUND_TRIPS} round trips per figure, ` +
    `load ${Deno.loadavg().map((x) => x.toFixed(2)).join(" ")}`,
);
for (let round = 1; round <= Number(args.rounds); round++) {
  for (const transport of ["unix", "tcp"] as const) {
    for (const work of [0, 20, 40]) {
      const { micros, parent, peer } = await pingPong(transport, work);
      console.log(
        `round ${round} ${transport.padEnd(4)} peer works ${String(work).padStart(2)} µs: ` +
          `${micros.toFixed(1).padStart(6)} µs per round trip, switches per round trip: ` +
          `parent ${parent.toFixed(2)}, peer ${peer.toFixed(2)}`,
      );
    }
  }
}
