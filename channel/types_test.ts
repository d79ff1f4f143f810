// Compile-time checks of the remote view's types: `deno check` (and `deno test`) fail if the
// mapping from a handler interface to its remote methods changes.

import assert from "node:assert/strict";
import type { Channel } from "./channel.ts";
import type { CallContext } from "./call_context.ts";
import type { CallOptions, CheckedHandlers, RemoteOf, RemoteStream } from "./types.ts";

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true
  : false;
function expectType<T extends true>(): T | undefined {
  return undefined;
}

interface Service {
  add(param: { a: number; b: number }): number;
  addAsync(param: { a: number; b: number }, ctx: CallContext): Promise<number>;
  now(): Date;
  maybe(param?: string): string;
  ticks(every: number): AsyncIterable<number>;
  ticksLater(every: number): Promise<AsyncIterable<string>>;
  upload(chunks: AsyncIterable<Uint8Array>): Promise<number>;
  transform(items: AsyncIterable<string>): AsyncIterable<string>;
  fail(): never;
  readonly version: string;
}
type Remote = RemoteOf<Service>;

Deno.test("the remote view maps each handler to a typed method, without any", () => {
  expectType<
    Equal<
      Remote["add"],
      (param: { a: number; b: number }, options?: CallOptions) => Promise<number>
    >
  >();
  expectType<
    Equal<
      Remote["addAsync"],
      (param: { a: number; b: number }, options?: CallOptions) => Promise<number>
    >
  >();
  expectType<Equal<Remote["now"], (param?: undefined, options?: CallOptions) => Promise<Date>>>();
  expectType<
    Equal<Remote["maybe"], (param?: string | undefined, options?: CallOptions) => Promise<string>>
  >();
  expectType<
    Equal<Remote["ticks"], (param: number, options?: CallOptions) => RemoteStream<number>>
  >();
  expectType<
    Equal<Remote["ticksLater"], (param: number, options?: CallOptions) => RemoteStream<string>>
  >();
  expectType<
    Equal<
      Remote["upload"],
      (param: AsyncIterable<Uint8Array>, options?: CallOptions) => Promise<number>
    >
  >();
  expectType<
    Equal<
      Remote["transform"],
      (param: AsyncIterable<string>, options?: CallOptions) => RemoteStream<string>
    >
  >();
  expectType<Equal<Remote["fail"], (param?: undefined, options?: CallOptions) => Promise<never>>>();
  // Non-function members are not methods.
  expectType<Equal<keyof Remote, Exclude<keyof Service, "version">>>();
  // A ReadableStream is accepted where the handler takes an AsyncIterable.
  const upload: Remote["upload"] = () => Promise.resolve(0);
  void upload(ReadableStream.from([new Uint8Array(1)]));
  assert.ok(true);
});

Deno.test("channel.call and channel.notify are typed by method name", () => {
  type Call = Channel<Service>["call"];
  type Params = Parameters<Call>;
  expectType<Equal<Params[0], Exclude<keyof Service, "version">>>();
  // @ts-expect-error: not a method of the peer
  const bad: Parameters<Call>[0] = "version";
  void bad;
  assert.ok(true);
});

interface Misused {
  add(a: number, b: number): number;
  three(a: number, ctx: CallContext, more: number): number;
  spread(...values: number[]): number;
  withContext(a: number, ctx?: CallContext<Service>): number;
}

Deno.test("a handler that takes more than one param cannot be called remotely", () => {
  type View = RemoteOf<Misused>;
  const remote = {} as View;
  const never = () => {
    // @ts-expect-error: `add` takes two params; its remote method says so
    remote.add(1, 2);
    // @ts-expect-error: three params
    remote.three(1);
    // @ts-expect-error: a rest param
    remote.spread(1);
    remote.withContext(1);
  };
  void never;
  expectType<
    Equal<
      Parameters<View["add"]>[0],
      'Handler "add" takes one param (and an optional CallContext): pass several values as one object, e.g. add({ a, b })'
    >
  >();
  expectType<
    Equal<View["withContext"], (param: number, options?: CallOptions) => Promise<number>>
  >();
  // The worker's side refuses such handlers where they are served.
  const serve = <H extends object>(handlers: H & CheckedHandlers<H>): H => handlers;
  // @ts-expect-error: `add` takes two params
  serve({ add: (a: number, b: number) => a + b });
  serve({ add: ({ a, b }: { a: number; b: number }, _ctx: CallContext) => a + b, version: "1" });
  assert.ok(true);
});

Deno.test("deno check names the handler that takes two params and says why", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const file = `${dir}/worker.ts`;
    const types = new URL("./types.ts", import.meta.url).href;
    await Deno.writeTextFile(
      file,
      `import type { CheckedHandlers, RemoteOf } from ${JSON.stringify(types)};\n` +
        `const serve = <H extends object>(h: H & CheckedHandlers<H>): H => h;\n` +
        `const handlers = { add(a: number, b: number): number { return a + b; } };\n` +
        `serve(handlers);\n` +
        `declare const remote: RemoteOf<typeof handlers>;\n` +
        `remote.add(1, 2);\n`,
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--no-config", file],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    assert.notEqual(code, 0);
    // Both the serving side and the call are errors, and each names the method and the rule.
    const mentions = text.split('Handler \\"add\\" takes one param').length - 1;
    assert.ok(mentions >= 2, text);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("every function that takes `handlers` refuses a handler with two params", async () => {
  const dir = await Deno.makeTempDir();
  try {
    const root = new URL("../", import.meta.url);
    const at = (path: string) => JSON.stringify(new URL(path, root).href);
    const file = `${dir}/parent.ts`;
    // Inline handlers: the check must not cost them their inferred return types.
    const bad = "{ add(a: number, b: number): number { return a + b; }, ok: () => 1 }";
    await Deno.writeTextFile(
      file,
      [
        `import { openChannel } from ${at("channel/channel.ts")};`,
        `import { serve } from ${at("channel/serve.ts")};`,
        `import { openJsonRpc } from ${at("jsonrpc/mod.ts")};`,
        `import { spawnWorker } from ${at("workers/spawn_worker.ts")};`,
        `import { WorkerPool } from ${at("workers/worker_pool.ts")};`,
        `import { jsonCodec } from ${at("codecs/json.ts")};`,
        `import type { Listener, Transport } from ${at("transports/types.ts")};`,
        `declare const transport: Transport;`,
        `declare const listener: Listener;`,
        `const codec = jsonCodec();`,
        `openChannel(transport, { codec, handlers: ${bad} });`,
        `serve(listener, { codec, handlers: () => (${bad}) });`,
        `openJsonRpc(transport, { framing: "ndjson", handlers: ${bad} });`,
        `spawnWorker("file:///w.ts", { handlers: ${bad} });`,
        `new WorkerPool("file:///w.ts", { handlers: ${bad} });`,
        // Fine: one param, or one param and the context; inferred returns keep their types.
        `let ran = false;`,
        `openChannel(transport, { codec, handlers: { hit: () => ran = true, n: (x: number) => x } });`,
        `void ran;`,
      ].join("\n"),
    );
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["check", "--config", new URL("deno.json", root).pathname, file],
      stdout: "piped",
      stderr: "piped",
      env: { NO_COLOR: "1" },
    }).output();
    const text = new TextDecoder().decode(stdout) + new TextDecoder().decode(stderr);
    assert.notEqual(code, 0);
    const lines = [...text.matchAll(/parent\.ts:(\d+):/g)].map((match) => Number(match[1]));
    // Lines 11 to 15 each fail, naming `add` and the rule; line 17 (fine handlers) does not.
    assert.deepEqual([...new Set(lines)].sort((a, b) => a - b), [11, 12, 13, 14, 15], text);
    const mentions = text.split('Handler \\"add\\" takes one param').length - 1;
    assert.equal(mentions, 5, text);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
