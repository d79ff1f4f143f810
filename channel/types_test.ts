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
