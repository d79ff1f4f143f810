// conduit talking to a peer written in Python from docs/protocol.md alone
// (interop/python/conduit_peer.py): over stdio and over a Unix socket, calls both ways, an
// error with code, data and cause, notifications both ways, streams both ways beyond the credit
// window, cancellation and deadlines seen by the Python handler, and a clean goodbye after
// which the Python process exits 0. Also runs the Python check of the golden vectors.

import assert from "node:assert/strict";
import { type Channel, openChannel } from "../channel/channel.ts";
import {
  CallCancelledError,
  DeadlineExceededError,
  HandshakeError,
  RemoteError,
} from "../channel/errors.ts";
import type { CallContext } from "../channel/call_context.ts";
import type { Codec } from "../codecs/types.ts";
import { jsonCodec } from "../codecs/json.ts";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { listenUnix } from "../transports/unix.ts";
import type { Transport } from "../transports/types.ts";

const PYTHON_DIR = new URL("./python/", import.meta.url).pathname;
const DEMO = `${PYTHON_DIR}demo_server.py`;
// Show every warning (unclosed transports, never-awaited coroutines) so the checks on the
// child's stderr below catch them.
const PYTHON_FLAGS = ["-W", "default"];
const PYTHON_ENV = { PYTHONDONTWRITEBYTECODE: "1" };

/** What the Python demo serves (interop/python/demo_server.py). */
interface PythonPeer {
  attempt(): { key: string | null; attempt: number };
  headers(): Record<string, string>;
  headersBack(param: { headers: Record<string, string> }): {
    seen: Record<string, string>;
    refused: (string | null)[];
  };
  add(param: { a: number; b: number }): number;
  fail(): void;
  count(param: { n: number; size?: number }): AsyncIterable<{ i: number; pad: string }>;
  sum(items: AsyncIterable<number>): number;
  measure(items: AsyncIterable<string>): { count: number; chars: number };
  slow(): void;
  ticks(): AsyncIterable<number>;
  callBack(param: { x: number }): number;
  notifications(): [string, unknown][];
  wasCancelled(): Record<string, unknown>;
  stats(): Record<string, number>;
  reverse(param: { n: number; size: number }): Record<string, unknown>;
  goodbye(): string;
  nope(): void;
  "ts.poke"(param: unknown): void;
  "ts.waiting"(): void;
}

const python = await probePython();

Deno.test({
  name: "interop/python: the Python peer reads every golden vector as conduit does",
  ignore: python.missing,
  async fn() {
    const { code, stdout, stderr } = await new Deno.Command("python3", {
      args: [`${PYTHON_DIR}test_vectors.py`],
      env: PYTHON_ENV,
      stdout: "piped",
      stderr: "piped",
    }).output();
    const report = new TextDecoder().decode(stdout);
    assert.equal(code, 0, report + new TextDecoder().decode(stderr));
    const [, matched, total] = report.match(/(\d+)\/(\d+) vectors match/) ?? [];
    assert.ok(Number(total) > 40, report);
    assert.equal(matched, total);
  },
});

Deno.test({
  name: "interop/python: the Python peer's own tests pass (two peers, raw-frame rules)",
  ignore: python.missing,
  async fn() {
    const { code, stderr } = await new Deno.Command("python3", {
      args: [...PYTHON_FLAGS, "-m", "unittest", "test_self.py"],
      cwd: PYTHON_DIR,
      stdout: "piped",
      stderr: "piped",
      env: PYTHON_ENV,
    }).output();
    const report = new TextDecoder().decode(stderr);
    assert.equal(code, 0, report);
    assert.match(report, /^OK/m);
  },
});

Deno.test({
  name: "interop/python: over stdio, the whole protocol (json)",
  ignore: python.missing,
  async fn() {
    await overStdio(jsonCodec(), "json");
  },
});

Deno.test({
  name: "interop/python: over stdio, the whole protocol (msgpack)",
  ignore: python.missing || !python.msgpack,
  async fn() {
    await overStdio(msgpackCodec(), "msgpack");
  },
});

Deno.test({
  name: "interop/python: over a Unix socket, the whole protocol (json), Python closes",
  ignore: python.missing,
  async fn() {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
    const path = `${dir}/py.sock`;
    const listener = await listenUnix(path);
    const child = new Deno.Command("python3", {
      args: [...PYTHON_FLAGS, DEMO, "--unix", path, "--window", "8192"],
      env: PYTHON_ENV,
      stdin: "null",
      stdout: "null",
      stderr: "piped",
    }).spawn();
    const stderr = collect(child.stderr);
    try {
      const exited = child.status.then(async ({ code }) => {
        throw new Error(`python exited with ${code} before connecting: ${await stderr}`);
      });
      const accepted = await Promise.race([listener[Symbol.asyncIterator]().next(), exited]);
      exited.catch(() => {}); // after a successful accept the exit is checked below
      assert.ok(!accepted.done);
      await exercise(accepted.value, jsonCodec(), "python");
      assert.equal((await child.status).code, 0, await stderr);
      assert.equal(await stderr, "");
    } finally {
      await listener.close();
      try {
        child.kill("SIGKILL");
      } catch { /* already exited */ }
      await child.status;
      await stderr;
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "interop/python: a codec mismatch fails the handshake on both sides",
  ignore: python.missing,
  async fn() {
    const lines: string[] = [];
    const transport = spawnTransport("python3", {
      args: [DEMO, "--stdio", "--codec", "json"],
      env: PYTHON_ENV,
      stderr: (line) => lines.push(line),
    });
    // JSON under another name (a class instance's methods do not spread: delegate to them).
    const json = jsonCodec();
    const mystery = {
      name: "mystery",
      encode: (value: unknown) => json.encode(value),
      decode: (bytes: Uint8Array) => json.decode(bytes),
    };
    const opening = openChannel(transport, { codec: mystery });
    await assert.rejects(opening, (error: unknown) => {
      assert.ok(error instanceof HandshakeError);
      assert.equal(error.code, "codec_mismatch");
      return true;
    });
    assert.equal((await transport.status).code, 2, lines.join("\n"));
    assert.match(lines.join("\n"), /codec_mismatch/, lines.join("\n"));
  },
});

Deno.test({
  name: "interop/python: a CALL with 33 headers from Python is a protocol error (§6)",
  ignore: python.missing,
  async fn() {
    const lines: string[] = [];
    const transport = spawnTransport("python3", {
      args: [...PYTHON_FLAGS, DEMO, "--stdio", "--bad-headers"],
      env: PYTHON_ENV,
      stderr: (line) => lines.push(line),
    });
    const echoed: unknown[] = [];
    const channel = await openChannel(transport, {
      codec: jsonCodec(),
      handlers: { "ts.echo": (param: unknown) => (echoed.push(param), param) },
    });
    try {
      const closed = await channel.closed.then(() => undefined, (error: unknown) => error);
      assert.ok(closed instanceof Error, `channel.closed settled with ${closed}`);
      assert.match(describe(closed), /more than 32 headers/);
      assert.equal((await transport.status).code, 0, lines.join("\n"));
      // The greeting's ts.echo ran; the CALL with 33 headers (param 1) reached no handler.
      assert.equal(echoed.length, 1);
      assert.notEqual(echoed[0], 1);
      assert.match(
        lines.join("\n"),
        /^demo_server: bad headers: ConnectionClosedError: the peer said GOODBYE: protocol_error \(.*more than 32 headers\)$/m,
      );
    } finally {
      await channel.close();
      await transport.close();
    }
  },
});

/** An error's message and its causes' messages, one a line. */
function describe(error: unknown): string {
  const lines: string[] = [];
  for (let e = error; e instanceof Error; e = e.cause) lines.push(`${e.name}: ${e.message}`);
  return lines.join("\n");
}

async function overStdio(codec: Codec<unknown>, name: string): Promise<void> {
  const lines: string[] = [];
  const transport = spawnTransport("python3", {
    args: [...PYTHON_FLAGS, DEMO, "--stdio", "--codec", name, "--window", "8192"],
    env: PYTHON_ENV,
    stderr: (line) => lines.push(line),
  });
  try {
    await exercise(transport, codec);
    assert.equal((await transport.status).code, 0, lines.join("\n"));
    assert.deepEqual(lines, []);
  } finally {
    await transport.close();
  }
}

/**
 * Runs every exchange against the Python demo, then closes with GOODBYE: sent first by us, or
 * by Python when `closer` is `"python"`.
 */
async function exercise(
  transport: Transport,
  codec: Codec<unknown>,
  closer: "ts" | "python" = "ts",
): Promise<void> {
  const inbox = new Inbox();
  const handlers = {
    "ts.echo": (param: unknown) => param,
    "ts.double": (x: number) => x * 2,
    "ts.headers": (_: undefined, ctx: CallContext) => ({ ...ctx.headers }),
    async *"ts.range"({ n, size }: { n: number; size: number }) {
      for (let i = 0; i < n; i++) yield { i, pad: "x".repeat(size) };
    },
    async "ts.total"(items: AsyncIterable<number>) {
      let total = 0;
      for await (const item of items) total += item;
      return total;
    },
    "ts.fail"() {
      const cause = new RangeError("too far");
      throw Object.assign(new TypeError("ts handler failed", { cause }), {
        code: "ts_failure",
        data: { why: "test" },
      });
    },
    async "ts.wait"(_: undefined, ctx: CallContext<PythonPeer>) {
      const aborted = new Promise((resolve) => ctx.signal.addEventListener("abort", resolve));
      ctx.channel.notify("ts.waiting", undefined);
      await aborted;
      inbox.put("ts.waitEnded", ctx.signal.reason);
      throw ctx.signal.reason;
    },
    "py.started": (param: unknown) => inbox.put("py.started", param),
    "py.poked": (param: unknown) => inbox.put("py.poked", param),
    "py.slowStarted": (param: unknown) => inbox.put("py.slowStarted", param),
    "py.cancelled": (param: unknown) => inbox.put("py.cancelled", param),
  };
  const channel: Channel<PythonPeer> = await openChannel<PythonPeer>(transport, {
    codec,
    handlers,
    streamWindowBytes: 16 * 1024, // small, so the streams below need many CREDIT frames
    defaultTimeout: 10_000, // a hung peer fails the test instead of stalling it
  });
  try {
    // Python called ts.echo on start, then notified us with what came back.
    assert.deepEqual(await inbox.take("py.started"), {
      echoed: { from: "python", n: 7, nested: { ok: true, text: "héllo ✓" } },
    });

    assert.equal(await channel.remote.add({ a: 2, b: 40 }), 42);
    // The Python peer reads call meta (§6): a retry's key and attempt reach its handler.
    assert.deepEqual(await channel.remote.attempt(), { key: null, attempt: 1 });
    assert.deepEqual(await channel.remote.attempt(undefined, { key: "job-1", attempt: 2 }), {
      key: "job-1",
      attempt: 2,
    });
    // Call headers (§6) both ways: a W3C trace context reaches the Python handler intact...
    const traced = {
      traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      tracestate: "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7",
      "x-request-id": "req-1.2_3",
      empty: "",
    };
    assert.deepEqual(await channel.remote.headers(undefined, { headers: traced }), traced);
    assert.deepEqual(await channel.remote.headers(), {});
    // ...and Python's headers reach ctx.headers here; Python refuses to send bad ones itself.
    const back = await channel.remote.headersBack({ headers: { "x-from": "python", ...traced } });
    assert.deepEqual(back.seen, { "x-from": "python", ...traced });
    assert.equal(back.refused.length, 3);
    assert.match(back.refused[0]!, /'ts\.headers'.*'headers': 33 headers, at most 32/);
    assert.match(back.refused[1]!, /'ts\.headers'.*header name 'Bad' is not 1 to 64/);
    assert.match(back.refused[2]!, /header 'x-ok' must be a string of 0 to 1024 printable ASCII/);
    // Python calls ts.double while it serves our call: calls cross both ways at once.
    assert.equal(await channel.remote.callBack({ x: 21 }), 42);

    await assert.rejects(channel.remote.fail(), (error: unknown) => {
      assert.ok(error instanceof RemoteError);
      assert.equal(error.name, "DemoError");
      assert.equal(error.message, "python handler failed");
      assert.equal(error.code, "demo_failure");
      assert.deepEqual(error.data, { answer: 42, list: [1, "two"] });
      assert.ok(error.cause instanceof RemoteError);
      assert.equal(error.cause.name, "IOError");
      assert.equal(error.cause.code, "EIO");
      return true;
    });
    await assert.rejects(channel.remote.nope(), (error: unknown) => {
      assert.ok(error instanceof RemoteError);
      assert.equal(error.code, "method_not_found");
      return true;
    });

    channel.notify("ts.poke", { k: [1, 2] });
    assert.deepEqual(await inbox.take("py.poked"), { k: [1, 2] });
    assert.deepEqual((await channel.remote.notifications()).at(-1), ["ts.poke", { k: [1, 2] }]);

    // A result stream of ~250 KB against our 16 KiB window: Python must wait for our CREDIT.
    const items = await Array.fromAsync(channel.remote.count({ n: 1000, size: 250 }));
    assert.deepEqual(items.map((item) => item.i), Array.from({ length: 1000 }, (_, i) => i));
    assert.equal(items[999].pad.length, 250);

    // Param streams against Python's 8 KiB window: we must wait for Python's CREDIT.
    assert.equal(await channel.remote.sum(numbers(500)), 500 * 499 / 2);
    const measured = await channel.remote.measure(strings(400, 1000));
    assert.deepEqual(measured, { count: 400, chars: 400_000 });

    // Cancelling a unary call: the Python handler sees the CANCEL and reports it.
    const controller = new AbortController();
    const slow = channel.remote.slow(undefined, { signal: controller.signal });
    await inbox.take("py.slowStarted");
    controller.abort(new Error("user pressed stop"));
    await assert.rejects(slow, /user pressed stop/);
    const cancelled = await inbox.take("py.cancelled") as { method: string; reason: string };
    assert.equal(cancelled.method, "slow");
    assert.equal(cancelled.reason, "user pressed stop"); // the abort reason crossed over

    // A deadline: both sides give up; Python's handler sees its deadline pass.
    await assert.rejects(channel.remote.slow(undefined, { timeout: 300 }), DeadlineExceededError);
    await inbox.take("py.slowStarted");
    const expired = await inbox.take("py.cancelled") as { method: string; reason: string };
    assert.equal(expired.method, "slow");
    assert.match(expired.reason, /deadline/);

    // Leaving an endless stream early cancels the Python producer.
    const ticks: number[] = [];
    for await (const tick of channel.remote.ticks()) {
      ticks.push(tick);
      if (ticks.length === 5) break;
    }
    assert.deepEqual(ticks, [0, 1, 2, 3, 4]);
    const stopped = await inbox.take("py.cancelled") as { method: string; sent: number };
    assert.equal(stopped.method, "ticks");
    assert.ok(stopped.sent >= 5);
    assert.deepEqual(Object.keys(await channel.remote.wasCancelled()).sort(), ["slow", "ticks"]);

    // The other direction: Python consumes a TS result stream, sends a TS param stream,
    // receives a TS error and cancels a running TS handler.
    assert.deepEqual(await channel.remote.reverse({ n: 5000, size: 40 }), {
      range: { count: 5000, inOrder: true, sizes: [40] },
      total: 5000 * 4999 / 2,
      error: {
        name: "TypeError",
        message: "ts handler failed",
        code: "ts_failure",
        data: { why: "test" },
        cause: { name: "RangeError", message: "too far" },
      },
      cancelled: true,
    });
    assert.ok(await inbox.take("ts.waitEnded") instanceof CallCancelledError);

    // Every stream above went through flow control, in both directions, on both sides.
    const stats = await channel.remote.stats();
    assert.ok(stats["received CREDIT(R=0)"] > 0, JSON.stringify(stats));
    assert.ok(stats["sent CREDIT(R=1)"] > 0, JSON.stringify(stats));
    assert.ok(stats["sent CREDIT(R=0)"] > 0, JSON.stringify(stats));
    assert.ok(stats["received CREDIT(R=1)"] > 0, JSON.stringify(stats));
    // Abort, deadline (the caller cancels too, crossing the handler's own ERROR), early break.
    assert.equal(stats["received CANCEL(R=0)"], 3, JSON.stringify(stats));

    if (closer === "python") {
      assert.equal(await channel.remote.goodbye(), "bye");
      await channel.closed; // Python's GOODBYE, ours in answer, then Python closes
    }
  } finally {
    await channel.close();
  }
  await channel.closed; // resolves only after GOODBYE both ways
}

async function* numbers(n: number): AsyncGenerator<number> {
  for (let i = 0; i < n; i++) yield i;
}

async function* strings(n: number, size: number): AsyncGenerator<string> {
  for (let i = 0; i < n; i++) yield String(i % 10).repeat(size);
}

/** Notifications from Python, taken in order per method. */
class Inbox {
  #queues = new Map<string, unknown[]>();
  #waiters = new Map<string, ((value: unknown) => void)[]>();

  put(method: string, value: unknown): void {
    const waiter = this.#waiters.get(method)?.shift();
    if (waiter) waiter(value);
    else this.#queue(method).push(value);
  }

  take(method: string): Promise<unknown> {
    const queue = this.#queue(method);
    if (queue.length > 0) return Promise.resolve(queue.shift());
    const { promise, resolve } = Promise.withResolvers<unknown>();
    const waiters = this.#waiters.get(method) ?? [];
    waiters.push(resolve);
    this.#waiters.set(method, waiters);
    return promise;
  }

  #queue(method: string): unknown[] {
    let queue = this.#queues.get(method);
    if (!queue) this.#queues.set(method, queue = []);
    return queue;
  }
}

async function collect(stream: ReadableStream<Uint8Array>): Promise<string> {
  let text = "";
  for await (const chunk of stream.pipeThrough(new TextDecoderStream())) text += chunk;
  return text;
}

async function probePython(): Promise<{ missing: boolean; msgpack: boolean }> {
  try {
    const { code } = await new Deno.Command("python3", {
      args: ["-c", "import msgpack"],
      stdout: "null",
      stderr: "null",
    }).output();
    return { missing: false, msgpack: code === 0 };
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
    console.warn("interop/python: python3 is not on PATH; skipping the Python interop tests");
    return { missing: true, msgpack: false };
  }
}
