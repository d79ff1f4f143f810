/**
 * JSON-RPC over a child's stdio, three clients against the same hand-written child
 * (bench/_jsonrpc_echo_server.ts): conduit's openJsonRpc, vscode-jsonrpc (the library VS Code
 * uses, run under Deno), and a hand-written NDJSON client. Small-call p50 (one call at a time)
 * and calls/s with 32 in flight, in interleaved rounds in one run; prints a markdown table.
 *
 *   deno run -A bench/jsonrpc_stdio.ts [--rounds 3] [--calls 20000]
 *
 * @module
 */

import { spawn } from "node:child_process";
import * as vscode from "vscode-jsonrpc/node";
import { openJsonRpc } from "../jsonrpc/mod.ts";
import { spawnTransport } from "../transports/stdio.ts";

const arg = (name: string, fallback: number) => {
  const at = Deno.args.indexOf(name);
  return at >= 0 ? Number(Deno.args[at + 1]) : fallback;
};
const ROUNDS = arg("--rounds", 3);
const CALLS = arg("--calls", 20_000);
const LATENCY_CALLS = 3000;
const IN_FLIGHT = 32;
const server = new URL("./_jsonrpc_echo_server.ts", import.meta.url).pathname;
const serverArgs = (framing: string) => ["run", "-A", server, framing];
const PARAM = { text: "hello", n: 42 };

interface Client {
  name: string;
  call(): Promise<unknown>;
  close(): Promise<void>;
}

async function conduitClient(framing: "ndjson" | "content-length"): Promise<Client> {
  const channel = await openJsonRpc<{ echo(p: typeof PARAM): typeof PARAM }>(
    spawnTransport(Deno.execPath(), { args: serverArgs(framing) }),
    { framing, defaultTimeout: Infinity },
  );
  return {
    name: `conduit openJsonRpc (${framing})`,
    call: () => channel.remote.echo(PARAM),
    close: () => channel.close(),
  };
}

/** The same over the child's own Deno pipes, not conduit's stdio transport (its BYOB reads). */
async function conduitOverPlainPipes(): Promise<Client> {
  const child = new Deno.Command(Deno.execPath(), {
    args: serverArgs("ndjson"),
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const transport = {
    readable: child.stdout,
    writable: child.stdin,
    close: async () => void await child.status,
    abort: async () => void (child.kill(), await child.status),
    [Symbol.asyncDispose]: () => transport.close(),
  };
  const channel = await openJsonRpc<{ echo(p: typeof PARAM): typeof PARAM }>(transport, {
    framing: "ndjson",
    defaultTimeout: Infinity,
  });
  return {
    name: "conduit openJsonRpc (ndjson, plain Deno pipes)",
    call: () => channel.remote.echo(PARAM),
    close: () => channel.close(),
  };
}

function vscodeClient(): Client {
  const child = spawn(Deno.execPath(), serverArgs("content-length"), {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const connection = vscode.createMessageConnection(
    new vscode.StreamMessageReader(child.stdout!),
    new vscode.StreamMessageWriter(child.stdin!),
  );
  connection.listen();
  return {
    name: "vscode-jsonrpc 10.0.0 (content-length)",
    call: () => connection.sendRequest("echo", PARAM),
    async close() {
      connection.dispose();
      child.stdin!.end();
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

/** What a user writes by hand: one write per message, lines split with TextDecoderStream. */
function handClient(): Client {
  const child = new Deno.Command(Deno.execPath(), {
    args: serverArgs("ndjson"),
    stdin: "piped",
    stdout: "piped",
  }).spawn();
  const writer = child.stdin.getWriter();
  const encoder = new TextEncoder();
  const waiting = new Map<number, (value: unknown) => void>();
  let nextId = 0;
  const reading = (async () => {
    let buffer = "";
    for await (const text of child.stdout.pipeThrough(new TextDecoderStream())) {
      buffer += text;
      let lf: number;
      while ((lf = buffer.indexOf("\n")) !== -1) {
        const message = JSON.parse(buffer.slice(0, lf)) as { id: number; result: unknown };
        buffer = buffer.slice(lf + 1);
        waiting.get(message.id)?.(message.result);
        waiting.delete(message.id);
      }
    }
  })();
  return {
    name: "hand-written NDJSON client",
    call() {
      const id = ++nextId;
      const { promise, resolve } = Promise.withResolvers<unknown>();
      waiting.set(id, resolve);
      writer.write(
        encoder.encode(
          JSON.stringify({ jsonrpc: "2.0", id, method: "echo", params: PARAM }) + "\n",
        ),
      );
      return promise;
    },
    async close() {
      await writer.close();
      await reading;
      await child.status;
    },
  };
}

async function latencyP50(client: Client): Promise<number> {
  const times = new Float64Array(LATENCY_CALLS);
  for (let i = 0; i < LATENCY_CALLS; i++) {
    const start = performance.now();
    await client.call();
    times[i] = performance.now() - start;
  }
  times.sort();
  return times[LATENCY_CALLS >> 1] * 1000;
}

async function throughput(client: Client): Promise<number> {
  let started = 0;
  const start = performance.now();
  await Promise.all(Array.from({ length: IN_FLIGHT }, async () => {
    while (started < CALLS) {
      started++;
      await client.call();
    }
  }));
  return CALLS / ((performance.now() - start) / 1000);
}

const clients = [
  await conduitClient("content-length"),
  vscodeClient(),
  await conduitClient("ndjson"),
  handClient(),
  await conduitOverPlainPipes(),
];
for (const client of clients) {
  for (let i = 0; i < 2000; i++) await client.call();
}
const results = new Map(
  clients.map((c) => [c.name, { p50: [] as number[], rate: [] as number[] }]),
);
// Every client's latency, then every client's throughput, so no p50 is taken just after a
// burst of calls; the order of the clients rotates from round to round.
for (let round = 0; round < ROUNDS; round++) {
  const order = clients.map((_, i) => clients[(i + round) % clients.length]);
  for (const client of order) results.get(client.name)!.p50.push(await latencyP50(client));
  for (const client of order) results.get(client.name)!.rate.push(await throughput(client));
}
for (const client of clients) await client.close();

const median = (values: number[]) => values.toSorted((a, b) => a - b)[values.length >> 1];
console.log(
  `JSON-RPC over a child's stdio, ${ROUNDS} interleaved rounds (medians), ${CALLS} calls at ` +
    `${IN_FLIGHT} in flight, Deno ${Deno.version.deno}\n`,
);
console.log("| client | small-call p50 | calls/s, 32 in flight |");
console.log("| --- | ---: | ---: |");
const summary = new Map<string, { p50: number; rate: number }>();
for (const [name, entry] of results) {
  const p50 = median(entry.p50);
  const rate = median(entry.rate);
  summary.set(name, { p50, rate });
  console.log(`| ${name} | ${p50.toFixed(0)} µs | ${Math.round(rate / 1000)}k |`);
}
const ratio = (a: string, b: string) => {
  const x = summary.get(a)!;
  const y = summary.get(b)!;
  console.log(
    `\n${a} vs ${b}: p50 ${(y.p50 / x.p50).toFixed(2)}× lower, calls/s ${
      (x.rate / y.rate).toFixed(2)
    }×`,
  );
};
ratio(clients[0].name, clients[1].name);
ratio(clients[2].name, clients[3].name);
ratio(clients[4].name, clients[3].name);
