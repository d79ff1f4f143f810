// A channel over a transport of your own, and the wire trace, on each runtime's runner: the two
// parts of the channel that _cases.ts reaches only through conduit's own transports.

import assert from "node:assert/strict";
import { openChannel } from "../channel/mod.ts";
import type { Transport } from "../transports/types.ts";
import { type RuntimeCase, runToEnd } from "./_cases.ts";

/** The channel cases every runner registers, in order. */
export const channelCases: RuntimeCase[] = [];

/**
 * Two transports made of nothing but Web Streams: each side's writable feeds the other's
 * readable through a TransformStream, as a user's own transport over any byte pipe would.
 */
function streamPair(): [Transport, Transport] {
  const ab = new TransformStream<Uint8Array, Uint8Array>();
  const ba = new TransformStream<Uint8Array, Uint8Array>();
  const side = (readable: ReadableStream<Uint8Array>, writable: WritableStream<Uint8Array>) => {
    const transport: Transport = {
      readable,
      writable,
      async close() {
        await writable.close().catch(() => {});
        await readable.cancel().catch(() => {});
      },
      async abort(reason?: unknown) {
        await writable.abort(reason).catch(() => {});
        await readable.cancel(reason).catch(() => {});
      },
      [Symbol.asyncDispose]: () => transport.close(),
    };
    return transport;
  };
  return [side(ba.readable, ab.writable), side(ab.readable, ba.writable)];
}

channelCases.push({
  name: "channel over a transport of Web Streams only: calls, streams and a clean close",
  async fn() {
    const [a, b] = streamPair();
    const handlers = {
      add: ({ a, b }: { a: number; b: number }) => a + b,
      async *count(to: number) {
        for (let i = 1; i <= to; i++) yield i;
      },
    };
    const [serving, calling] = await Promise.all([
      openChannel(a, { handlers }),
      openChannel<typeof handlers>(b),
    ]);
    assert.equal(await calling.remote.add({ a: 40, b: 2 }), 42);
    assert.deepEqual(await Array.fromAsync(calling.remote.count(50)), [
      ...Array.from({ length: 50 }, (_, i) => i + 1),
    ]);
    await calling.close();
    await serving.closed;
  },
});

channelCases.push({
  name: "the wire trace: each frame both ways, with its kind, id, method and body, to a callback",
  async fn() {
    const [a, b] = streamPair();
    const lines: string[] = [];
    const [serving, calling] = await Promise.all([
      openChannel(a, { handlers: { echo: (value: unknown) => value } }),
      openChannel<{ echo(value: string): string }>(b, { trace: (line) => lines.push(line) }),
    ]);
    assert.equal(await calling.remote.echo("traced"), "traced");
    await calling.close();
    await serving.closed;
    const text = lines.join("\n");
    assert.match(text, /^conduit → HELLO \{"protocol":"conduit"/m);
    assert.match(text, /^conduit ← HELLO /m);
    assert.match(text, /^conduit → CALL #1 echo .*"traced"$/m);
    assert.match(text, /^conduit ← RESULT #1 .*"traced" \(\+[\d.]+ ms\)$/m);
  },
});

channelCases.push({
  name: "unref() lets a program end with a call pending; CONDUIT_TRACE=1 traces to stderr",
  async fn() {
    // A channel that kept the program alive would hold it for the call's 60 s deadline.
    const { stdout, stderr } = await runToEnd("./_unref_child.ts", { CONDUIT_TRACE: "1" });
    assert.equal(stdout.trim(), "pong");
    assert.match(stderr, /conduit → CALL #1 ping/);
    assert.match(stderr, /conduit ← RESULT #1 .*"pong"/);
  },
});
