// Compile-time checks of the remote view's types: `deno check` (and `deno test`) fail if the
// mapping from a handler interface to its remote methods changes.

import assert from "node:assert/strict";
import type { Channel } from "./channel.ts";
import type { CallContext } from "./call_context.ts";
import type { CallOptions, RemoteOf, RemoteStream } from "./types.ts";

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
