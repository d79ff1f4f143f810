import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import type { Table } from "apache-arrow";
import { arrowCodec, tableFromColumns } from "../codecs/arrow.ts";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { rawCodec } from "../codecs/raw.ts";
import { CodecError, ConduitError } from "../errors.ts";
import { type TransportKind, transportKinds } from "../transports/_test_pairs.ts";
import { type Channel, type ChannelOptions, openChannel } from "./channel.ts";
import {
  CallCancelledError,
  ConnectionClosedError,
  DeadlineExceededError,
  DrainTimeoutError,
  MethodNotFoundError,
  RemoteError,
} from "./errors.ts";
import type { CallContext } from "./call_context.ts";

/** A server channel serving `handlers` and a client channel calling it, over one transport. */
async function connect<Remote extends object, Back extends object = Record<string, never>>(
  kind: TransportKind,
  server: Omit<ChannelOptions, "codec"> & { codec?: ChannelOptions["codec"] },
  client: Omit<ChannelOptions, "codec"> & { codec?: ChannelOptions["codec"] } = {},
): Promise<
  { server: Channel<Back>; client: Channel<Remote> } & AsyncDisposable
> {
  const pair = await kind.pair();
  const [serverChannel, clientChannel] = await Promise.all([
    openChannel<Back>(pair.a, { codec: jsonCodec(), ...server }),
    openChannel<Remote>(pair.b, { codec: jsonCodec(), ...client }),
  ]);
  return {
    server: serverChannel,
    client: clientChannel,
    async [Symbol.asyncDispose]() {
      await Promise.all([clientChannel.close(), serverChannel.close()]);
      await pair.cleanup();
    },
  };
}

function deferred<T = void>(): PromiseWithResolvers<T> {
  return Promise.withResolvers<T>();
}

interface Api {
  add(param: { a: number; b: number }): number;
  echo<T>(value: T): T;
  nothing(): void;
  later(param: { key: number }, ctx: CallContext): Promise<number>;
  wait(ms: number, ctx: CallContext): Promise<string>;
  count(to: number, ctx: CallContext): AsyncIterable<number>;
  sum(items: AsyncIterable<number>): Promise<number>;
  take(param: AsyncIterable<number>): Promise<number[]>;
  double(items: AsyncIterable<number>): AsyncIterable<number>;
  fail(kind: string): never;
}

for (const kind of transportKinds) {
  const test = (name: string, fn: () => Promise<void>) =>
    Deno.test(`channel over ${kind.name}: ${name}`, fn);

  test("unary calls return results, void and undefined params included", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: {
        add: ({ a, b }: { a: number; b: number }) => a + b,
        echo: (value: unknown) => value,
        nothing: () => {},
      },
    });
    const remote = pair.client.remote;
    assert.equal(await remote.add({ a: 2, b: 3 }), 5);
    assert.deepEqual(await remote.echo({ nested: [1, "two", null] }), { nested: [1, "two", null] });
    assert.equal(await remote.nothing(), undefined);
    assert.equal(await remote.echo(undefined), undefined);
    assert.equal(await pair.client.call("add", { a: 1, b: 1 }), 2);
  });

  test("responses arrive in any order and each matches its call", async () => {
    const gates = new Map<number, PromiseWithResolvers<void>>();
    const arrived = deferred();
    await using pair = await connect<Api>(kind, {
      handlers: {
        async later({ key }: { key: number }) {
          const gate = deferred();
          gates.set(key, gate);
          if (gates.size === 20) arrived.resolve();
          await gate.promise;
          return key * 10;
        },
      },
    });
    const calls = Array.from({ length: 20 }, (_, key) => pair.client.remote.later({ key }));
    await arrived.promise;
    const order: number[] = [];
    const settled = calls.map((call, key) => call.then((value) => order.push(key) && value));
    for (let key = 19; key >= 0; key--) {
      gates.get(key)!.resolve();
      await settled[key];
    }
    assert.deepEqual(await Promise.all(calls), calls.map((_, key) => key * 10));
    assert.deepEqual(order, Array.from({ length: 20 }, (_, i) => 19 - i));
  });

  test("calls beyond maxInFlight wait instead of failing", async () => {
    let active = 0;
    let peak = 0;
    await using pair = await connect<Api>(kind, {
      maxInFlight: 3,
      handlers: {
        async later({ key }: { key: number }) {
          peak = Math.max(peak, ++active);
          await new Promise((resolve) => setTimeout(resolve, 1));
          active--;
          return key;
        },
      },
    });
    assert.equal(pair.client.peer?.maxInFlight, 3);
    const keys = Array.from({ length: 30 }, (_, key) => key);
    assert.deepEqual(await Promise.all(keys.map((key) => pair.client.remote.later({ key }))), keys);
    assert.equal(peak, 3);
  });

  test("notifications flow in both directions", async () => {
    const toServer = deferred<string>();
    const toClient = deferred<number>();
    interface ServerApi {
      log(message: string): void;
    }
    interface ClientApi {
      tick(n: number): void;
    }
    await using pair = await connect<ServerApi, ClientApi>(
      kind,
      { handlers: { log: (message: string) => toServer.resolve(message) } },
      { handlers: { tick: (n: number) => toClient.resolve(n) } },
    );
    pair.client.notify("log", "hello");
    pair.server.notify("tick", 7);
    assert.equal(await toServer.promise, "hello");
    assert.equal(await toClient.promise, 7);
  });

  test("a failing notification handler is reported, and unknown ones are ignored", async () => {
    const reported = deferred<[unknown, string]>();
    interface ServerApi {
      boom(n: number): Promise<void>;
      unknown(n: number): void;
    }
    await using pair = await connect<ServerApi>(kind, {
      handlers: {
        boom: (n: number) => Promise.reject(new RangeError(`bad ${n}`)),
      },
      onNotificationError: (error, method) => reported.resolve([error, method]),
    });
    pair.client.notify("unknown", 1);
    pair.client.notify("boom", 3);
    const [error, method] = await reported.promise;
    assert.ok(error instanceof RangeError);
    assert.equal(error.message, "bad 3");
    assert.equal(method, "boom");
  });

  test("a handler calls the caller back through ctx.channel", async () => {
    interface ClientApi {
      scale(n: number): number;
    }
    interface ServerApi {
      compute(n: number, ctx: CallContext<ClientApi>): Promise<number>;
    }
    await using pair = await connect<ServerApi, ClientApi>(
      kind,
      {
        handlers: {
          compute: async (n: number, ctx: CallContext<ClientApi>) =>
            1 + await ctx.channel.remote.scale(n),
        },
      },
      { handlers: { scale: (n: number) => n * 100 } },
    );
    assert.equal(await pair.client.remote.compute(3), 301);
  });

  test("server streams: items in order, a ReadableStream face, and an empty stream", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: {
        async *count(to: number) {
          for (let i = 1; i <= to; i++) yield i;
        },
      },
    });
    assert.deepEqual(
      await Array.fromAsync(pair.client.remote.count(100)),
      [
        ...Array(100).keys(),
      ].map((i) => i + 1),
    );
    const reader = pair.client.remote.count(2).readable.getReader();
    assert.deepEqual(await reader.read(), { done: false, value: 1 });
    assert.deepEqual(await reader.read(), { done: false, value: 2 });
    assert.deepEqual(await reader.read(), { done: true, value: undefined });
    assert.deepEqual(await Array.fromAsync(pair.client.remote.count(0)), []);
  });

  test("breaking out of a stream cancels the producer: its signal fires and finally runs", async () => {
    const finished = deferred<unknown>();
    await using pair = await connect<Api>(kind, {
      handlers: {
        async *count(to: number, ctx: CallContext) {
          try {
            for (let i = 1; i <= to; i++) yield i;
          } finally {
            finished.resolve(ctx.signal.reason);
          }
        },
      },
    });
    const seen: number[] = [];
    for await (const n of pair.client.remote.count(1_000_000)) {
      seen.push(n);
      if (n === 3) break;
    }
    assert.deepEqual(seen, [1, 2, 3]);
    assert.ok(await finished.promise instanceof CallCancelledError);
    // The channel stays usable.
    assert.deepEqual(await Array.fromAsync(pair.client.remote.count(2)), [1, 2]);
  });

  test("cancel() on a stream and on its readable stop the producer", async () => {
    let finallies = 0;
    const stopped = [deferred(), deferred()];
    await using pair = await connect<Api>(kind, {
      handlers: {
        async *count(to: number) {
          try {
            for (let i = 1; i <= to; i++) yield i;
          } finally {
            stopped[finallies++].resolve();
          }
        },
      },
    });
    const stream = pair.client.remote.count(1_000_000);
    const iterator = stream[Symbol.asyncIterator]();
    assert.deepEqual(await iterator.next(), { done: false, value: 1 });
    await stream.cancel();
    assert.deepEqual(await iterator.next(), { done: true, value: undefined });
    await stopped[0].promise;
    const readable = pair.client.remote.count(1_000_000).readable;
    const reader = readable.getReader();
    await reader.read();
    await reader.cancel();
    await stopped[1].promise;
  });

  test("client streams: an AsyncIterable or a ReadableStream param", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: {
        async sum(items: AsyncIterable<number>) {
          let total = 0;
          for await (const n of items) total += n;
          return total;
        },
      },
    });
    async function* numbers() {
      for (let i = 1; i <= 1000; i++) yield i;
    }
    assert.equal(await pair.client.remote.sum(numbers()), 500500);
    assert.equal(await pair.client.remote.sum(ReadableStream.from([1, 2, 3])), 6);
    assert.equal(await pair.client.remote.sum(ReadableStream.from<number>([])), 0);
  });

  test("a handler that stops reading its param stream stops the caller's source", async () => {
    const closed = [deferred(), deferred()];
    await using pair = await connect<Api>(kind, {
      handlers: {
        async take(items: AsyncIterable<number>) {
          const taken: number[] = [];
          for await (const n of items) {
            taken.push(n);
            if (taken.length === 3) break;
          }
          return taken;
        },
        async sum(items: AsyncIterable<number>) {
          const iterator = items[Symbol.asyncIterator]();
          const first = await iterator.next();
          return first.value as number;
        },
      },
    });
    async function* forever(done: PromiseWithResolvers<void>) {
      try {
        for (let i = 1;; i++) yield i;
      } finally {
        done.resolve();
      }
    }
    assert.deepEqual(await pair.client.remote.take(forever(closed[0])), [1, 2, 3]);
    await closed[0].promise;
    // Returning without reading the rest also stops the source.
    assert.equal(await pair.client.remote.sum(forever(closed[1])), 1);
    await closed[1].promise;
  });

  test("a failing param stream reaches the handler as an error", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: {
        async sum(items: AsyncIterable<number>) {
          let total = 0;
          try {
            for await (const n of items) total += n;
          } catch (error) {
            throw new Error(`after ${total}`, { cause: error });
          }
          return total;
        },
      },
    });
    async function* broken() {
      yield 1;
      yield 2;
      throw new RangeError("source broke");
    }
    const error = await pair.client.remote.sum(broken()).catch((e) => e);
    assert.ok(error instanceof RemoteError);
    assert.equal(error.message, "after 3");
    assert.ok(error.cause instanceof RemoteError);
    assert.equal(error.cause.name, "RangeError");
    assert.equal(error.cause.message, "source broke");
  });

  test("bidirectional streams", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: {
        async *double(items: AsyncIterable<number>) {
          for await (const n of items) yield n * 2;
        },
      },
    });
    async function* numbers() {
      for (let i = 0; i < 500; i++) yield i;
    }
    const doubled = await Array.fromAsync(pair.client.remote.double(numbers()));
    assert.deepEqual(doubled, Array.from({ length: 500 }, (_, i) => i * 2));
  });

  test("errors cross with name, message, code, data and their cause chain", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: {
        fail(kind: string) {
          if (kind === "string") throw "a bare string";
          throw Object.assign(
            new TypeError("outer", {
              cause: new RangeError("inner", { cause: new Error("root") }),
            }),
            { code: "E_OUTER", data: { field: "x", limits: [1, 2] } },
          );
        },
      },
    });
    const error = await pair.client.remote.fail("error").catch((e) => e);
    assert.ok(error instanceof RemoteError);
    assert.equal(error.name, "TypeError");
    assert.equal(error.message, "outer");
    assert.equal(error.code, "E_OUTER");
    assert.deepEqual(error.data, { field: "x", limits: [1, 2] });
    assert.equal(error.remoteStack, undefined, "no stack towards an untrusted peer");
    const cause = error.cause as RemoteError;
    assert.ok(cause instanceof RemoteError);
    assert.equal(cause.name, "RangeError");
    assert.equal(cause.message, "inner");
    assert.equal((cause.cause as Error).message, "root");
    const bare = await pair.client.remote.fail("string").catch((e) => e);
    assert.ok(bare instanceof RemoteError);
    assert.equal(bare.message, "a bare string");
  });

  test("stacks cross only to a trusted peer; registered classes are revived", async () => {
    class ValidationError extends Error {
      override name = "ValidationError";
    }
    await using pair = await connect<Api>(
      kind,
      {
        trustPeer: true,
        handlers: {
          fail() {
            throw new ValidationError("bad field", { cause: new Error("why") });
          },
        },
      },
      // Stacks are kept only from a peer this side trusts too.
      { errorClasses: [ValidationError], trustPeer: true },
    );
    const error = await pair.client.remote.fail("x").catch((e) => e);
    assert.ok(error instanceof ValidationError);
    assert.equal(error.message, "bad field");
    assert.match(
      (error as unknown as { remoteStack: string }).remoteStack,
      /ValidationError: bad field\n\s+at /,
    );
    assert.ok(error.cause instanceof RemoteError);
    assert.equal(error.cause.message, "why");
  });

  test("an unknown method rejects with MethodNotFoundError", async () => {
    await using pair = await connect<Api>(kind, { handlers: {} });
    const error = await pair.client.remote.add({ a: 1, b: 2 }).catch((e) => e);
    assert.ok(error instanceof MethodNotFoundError);
    assert.equal(error.method, "add");
    assert.equal(error.code, "method_not_found");
    // Object.prototype members are not methods.
    const untyped = pair.client as unknown as Channel<Record<string, () => unknown>>;
    for (const method of ["toString", "constructor", "__proto__", "hasOwnProperty"]) {
      const error = await untyped.call(method).catch((e) => e);
      assert.ok(error instanceof MethodNotFoundError, method);
    }
  });

  test("abort rejects at once with the reason; the handler's signal fires", async () => {
    const started = deferred();
    const handlerSaw = deferred<unknown>();
    await using pair = await connect<Api>(kind, {
      handlers: {
        echo: (value: unknown) => value,
        wait(_ms: number, ctx: CallContext) {
          started.resolve();
          return new Promise<string>((_, reject) => {
            ctx.signal.addEventListener("abort", () => {
              handlerSaw.resolve(ctx.signal.reason);
              reject(ctx.signal.reason);
            });
          });
        },
      },
    });
    const controller = new AbortController();
    const call = pair.client.remote.wait(0, { signal: controller.signal });
    await started.promise;
    const reason = new Error("user pressed stop");
    controller.abort(reason);
    assert.equal(await call.catch((e) => e), reason);
    const seen = await handlerSaw.promise;
    assert.ok(seen instanceof CallCancelledError);
    assert.match(seen.message, /user pressed stop/);
    // An already-aborted signal never starts the call.
    const early = await pair.client.remote.wait(0, { signal: AbortSignal.abort("nope") })
      .catch((e) => e);
    assert.equal(early, "nope");
    assert.equal(await pair.client.remote.echo(1), 1);
  });

  test("deadlines: the call rejects, the handler's signal fires with the remaining time", async () => {
    const handlerSaw = deferred<{ reason: unknown; deadline: number | undefined }>();
    await using pair = await connect<Api>(kind, {
      handlers: {
        wait(_ms: number, ctx: CallContext) {
          return new Promise<string>((_, reject) => {
            ctx.signal.addEventListener("abort", () => {
              handlerSaw.resolve({ reason: ctx.signal.reason, deadline: ctx.deadline });
              reject(ctx.signal.reason);
            });
          });
        },
        echo: (value: unknown, ctx: CallContext) => [value, ctx.deadline !== undefined],
      },
    }, { defaultTimeout: 30_000 });
    const before = Date.now();
    const error = await pair.client.remote.wait(0, { timeout: 30 }).catch((e) => e);
    assert.ok(error instanceof DeadlineExceededError);
    assert.equal(error.timeout, 30);
    const seen = await handlerSaw.promise;
    assert.ok(seen.reason instanceof DeadlineExceededError);
    assert.ok(seen.deadline !== undefined && seen.deadline >= before);
    // The default deadline travels too; Infinity sends none.
    assert.deepEqual(await pair.client.remote.echo(1), [1, true]);
    assert.deepEqual(await pair.client.remote.echo(1, { timeout: Infinity }), [1, false]);
    const invalid = await pair.client.remote.echo(1, { timeout: -1 }).catch((e) => e);
    assert.ok(invalid instanceof RangeError);
  });

  test("the channel's default timeout applies to calls without one", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: { wait: (_ms: number, ctx: CallContext) => waitForAbort(ctx.signal) },
    }, { defaultTimeout: 20 });
    const error = await pair.client.remote.wait(0).catch((e) => e);
    assert.ok(error instanceof DeadlineExceededError);
    assert.equal(error.timeout, 20);
  });

  test("a deadline ends a stream that runs too long", async () => {
    const finished = deferred<unknown>();
    await using pair = await connect<Api>(kind, {
      handlers: {
        async *count(_to: number, ctx: CallContext) {
          try {
            yield 1;
            await waitForAbort(ctx.signal);
          } finally {
            finished.resolve(ctx.signal.reason);
          }
        },
      },
    });
    const seen: number[] = [];
    const error = await (async () => {
      for await (const n of pair.client.remote.count(5, { timeout: 30 })) seen.push(n);
    })().catch((e) => e);
    assert.deepEqual(seen, [1]);
    assert.ok(error instanceof DeadlineExceededError);
    assert.ok(await finished.promise instanceof DeadlineExceededError);
  });

  test("per-method codecs: raw bytes on a JSON channel", async () => {
    interface Bytes {
      reverse(bytes: Uint8Array): Uint8Array;
      size(bytes: Uint8Array): number;
    }
    const methodCodecs = { reverse: rawCodec(), size: { param: rawCodec() } };
    await using pair = await connect<Bytes>(kind, {
      methodCodecs,
      handlers: {
        reverse: (bytes: Uint8Array) => bytes.slice().reverse(),
        size: (bytes: Uint8Array) => bytes.length,
      },
    }, { methodCodecs });
    assert.deepEqual(
      await pair.client.remote.reverse(new Uint8Array([1, 2, 3])),
      new Uint8Array([3, 2, 1]),
    );
    assert.deepEqual(await pair.client.remote.reverse(new Uint8Array(0)), new Uint8Array(0));
    assert.equal(await pair.client.remote.size(new Uint8Array(1000)), 1000);
  });

  test("raw values: a stream's buffer refilled after each yield goes out as it was", async () => {
    interface Sums {
      sum(bytes: Uint8Array): number;
      sums(bytes: AsyncIterable<Uint8Array>): number;
    }
    const total = (bytes: Uint8Array) => bytes.reduce((sum, byte) => sum + byte, 0);
    await using pair = await connect<Sums>(kind, {
      codec: rawCodec(),
      methodCodecs: { sum: { result: jsonCodec() }, sums: { result: jsonCodec() } },
      handlers: {
        sum: total,
        async sums(items: AsyncIterable<Uint8Array>) {
          let sum = 0;
          for await (const item of items) sum += total(item);
          return sum;
        },
      },
    }, {
      codec: rawCodec(),
      methodCodecs: { sum: { result: jsonCodec() }, sums: { result: jsonCodec() } },
    });
    // Small values are batched, large ones (past 64 KiB) written as they are (see
    // body_ownership_test.ts for the rules).
    for (const size of [100, 200_000]) {
      const buffer = new Uint8Array(size).fill(1);
      assert.equal(await pair.client.remote.sum(buffer), size);
      // A stream that refills one buffer for every item, as a file reader does.
      const refilled = async function* () {
        for (let i = 0; i < 3; i++) yield buffer.fill(i + 1);
      };
      assert.equal(await pair.client.remote.sums(refilled()), size * 6);
    }
  });

  test("per-method codecs: an Arrow table result on a MessagePack channel", async () => {
    interface Reports {
      report(param: { rows: number }): Table;
      size(param: { rows: number }): number;
    }
    const methodCodecs = { report: { result: arrowCodec() } };
    await using pair = await connect<Reports>(kind, {
      codec: msgpackCodec(),
      methodCodecs,
      handlers: {
        report: ({ rows }: { rows: number }) =>
          tableFromColumns({
            id: Int32Array.from({ length: rows }, (_, i) => i),
            name: Array.from({ length: rows }, (_, i) => `row ${i}`),
          }),
        size: ({ rows }: { rows: number }) => rows,
      },
    }, { codec: msgpackCodec(), methodCodecs });
    const table = await pair.client.remote.report({ rows: 1000 });
    assert.equal(table.numRows, 1000);
    assert.deepEqual(Array.from(table.getChild("id")!.toArray()).slice(0, 3), [0, 1, 2]);
    assert.equal(table.getChild("name")!.get(999), "row 999");
    assert.equal(await pair.client.remote.size({ rows: 7 }), 7);
  });

  test("a stream awaited as a promise, or a value iterated as a stream, fails clearly", async () => {
    await using pair = await connect<Api>(kind, {
      handlers: {
        async *count(to: number) {
          for (let i = 1; i <= to; i++) yield i;
        },
        add: ({ a, b }: { a: number; b: number }) => a + b,
      },
    });
    const untyped = pair.client as unknown as Channel<Record<string, (n: unknown) => unknown>>;
    const asPromise = await (untyped.remote.count(3) as Promise<unknown>).catch((e) => e);
    assert.ok(asPromise instanceof ConduitError);
    assert.match(asPromise.message, /returned a stream/);
    const asStream = untyped.remote.add({ a: 1, b: 2 }) as unknown as AsyncIterable<unknown>;
    await assert.rejects(Array.fromAsync(asStream), /returned a single value/);
    // A call that fails before any frame is sent fails on both faces.
    const unencodable = { big: 1n } as unknown as number;
    await assert.rejects(Array.fromAsync(pair.client.remote.count(unencodable)), CodecError);
    await assert.rejects(pair.client.remote.add(unencodable as never), CodecError);
    assert.equal(await pair.client.remote.add({ a: 1, b: 1 }), 2);
  });

  test("graceful close drains in-flight calls both ways, then rejects new ones", async () => {
    const release = deferred();
    const started = deferred();
    const pair = await kind.pair();
    const [server, client] = await Promise.all([
      openChannel(pair.a, {
        codec: jsonCodec(),
        handlers: {
          async later({ key }: { key: number }) {
            started.resolve();
            await release.promise;
            return key;
          },
        },
      }),
      openChannel<Api>(pair.b, { codec: jsonCodec() }),
    ]);
    const inFlight = client.remote.later({ key: 42 });
    await started.promise;
    const closing = client.close();
    const rejected = await client.remote.add({ a: 1, b: 1 }).catch((e) => e);
    assert.ok(rejected instanceof ConnectionClosedError);
    assert.throws(() => client.notify("nothing", undefined), ConnectionClosedError);
    release.resolve();
    assert.equal(await inFlight, 42);
    await closing;
    await client.closed;
    await server.closed;
    await pair.cleanup();
  });

  test("a drain timeout closes abortively and fails what is left", async () => {
    const pair = await kind.pair();
    const started = deferred();
    const [server, client] = await Promise.all([
      openChannel(pair.a, {
        codec: jsonCodec(),
        handlers: {
          wait(_ms: number, ctx: CallContext) {
            started.resolve();
            return waitForAbort(ctx.signal);
          },
        },
      }),
      openChannel<Api>(pair.b, { codec: jsonCodec(), drainTimeout: 30 }),
    ]);
    const stuck = client.remote.wait(0).catch((e) => e);
    await started.promise;
    await client.close();
    const error = await stuck;
    // Its own typed error, still a ConnectionClosedError; the peer is told why in its GOODBYE.
    assert.ok(error instanceof DrainTimeoutError);
    assert.ok(error instanceof ConnectionClosedError);
    assert.equal(error.timeout, 30);
    assert.match(error.message, /drainTimeout \(30 ms\)/);
    await assert.rejects(client.closed, DrainTimeoutError);
    const reason = "drainTimeout (30 ms) passed with calls in flight";
    await assert.rejects(server.closed, {
      name: "ConnectionClosedError",
      message: `The peer closed the connection (aborted): ${reason}`,
      goodbye: { code: "aborted", reason },
    });
    await pair.cleanup();
  });

  test("abort() fails pending calls with the cause, and the peer's handlers see it", async () => {
    const pair = await kind.pair();
    const started = deferred();
    const handlerSaw = deferred<unknown>();
    const [server, client] = await Promise.all([
      openChannel(pair.a, {
        codec: jsonCodec(),
        handlers: {
          async wait(_ms: number, ctx: CallContext) {
            started.resolve();
            await waitForAbort(ctx.signal).catch((e) => handlerSaw.resolve(e));
            return "late";
          },
        },
      }),
      openChannel<Api>(pair.b, { codec: jsonCodec() }),
    ]);
    const pending = client.remote.wait(0).catch((e) => e);
    await started.promise;
    const reason = new Error("shutting down");
    await client.abort(reason);
    const error = await pending;
    assert.ok(error instanceof ConnectionClosedError);
    assert.equal(error.cause, reason);
    assert.ok(await handlerSaw.promise instanceof ConnectionClosedError);
    await assert.rejects(server.closed, ConnectionClosedError);
    await pair.cleanup();
  });

  test("10,000 calls in flight at once, every result matched to its call", async () => {
    await using pair = await connect<Api>(kind, {
      maxInFlight: 10_000,
      handlers: {
        later({ key }: { key: number }) {
          // Answer out of order: some at once, some after a macrotask.
          return key % 3 === 0
            ? new Promise<number>((resolve) => setTimeout(() => resolve(key * 2), 0))
            : Promise.resolve(key * 2);
        },
      },
    }, { maxInFlight: 10_000 });
    const keys = Array.from({ length: 10_000 }, (_, key) => key);
    const results = await Promise.all(keys.map((key) => pair.client.remote.later({ key })));
    for (const key of keys) assert.equal(results[key], key * 2);
  });

  test("a slow stream consumer bounds what the producer has produced", async () => {
    let produced = 0;
    const item = "x".repeat(100);
    await using pair = await connect<Api>(kind, {
      handlers: {
        async *count() {
          for (;;) {
            produced++;
            yield item as unknown as number;
          }
        },
      },
    }, { streamWindowBytes: 1024 });
    const stream = pair.client.remote.count(0);
    const iterator = stream[Symbol.asyncIterator]();
    await iterator.next();
    await new Promise((resolve) => setTimeout(resolve, 50));
    // 1024 bytes of credit, 105 bytes per item: 10 items, one more as credit runs out.
    assert.ok(produced <= 12, `produced ${produced} items with 1 consumed`);
    const before = produced;
    for (let i = 0; i < 20; i++) await iterator.next();
    assert.ok(produced > before, "consuming grants more credit");
    await iterator.return?.();
  });
}

Deno.test("channel: a remote call with two params rejects rather than throws", async () => {
  const kind = transportKinds[0];
  const handlers = {
    add: ({ a, b }: { a: number; b: number }) => a + b,
    async *count(to: number) {
      for (let i = 1; i <= to; i++) yield i;
    },
  };
  await using pair = await connect<typeof handlers>(kind, { handlers });
  const loose = pair.client.remote as unknown as Record<string, (...args: unknown[]) => unknown>;
  const message = /^remote\.add\(\) got 2 as its second argument, which is not call options/;
  let returned: unknown;
  assert.doesNotThrow(() => returned = loose.add(1, 2));
  const caught = await (returned as Promise<unknown>).catch((error: unknown) => error);
  assert.ok(caught instanceof TypeError);
  assert.match(caught.message, message);
  // Read as a stream it fails at its first item, with the same error.
  await assert.rejects(Array.fromAsync(loose.count(3, 4) as AsyncIterable<number>), {
    name: "TypeError",
    message: /^remote\.count\(\) got 4 as its second argument/,
  });
  assert.equal(await pair.client.remote.add({ a: 1, b: 2 }), 3);
});

function waitForAbort(signal: AbortSignal): Promise<never> {
  return new Promise((_, reject) => {
    if (signal.aborted) reject(signal.reason);
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}
