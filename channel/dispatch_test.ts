// A long read is dispatched in slices: what the first frames produce (answers, and the calls
// their settled callers make next) is written before the last frames are dispatched, so two
// busy peers overlap instead of taking turns. Observed through a transport whose sink records
// how far dispatch had got at each write; no timing involved.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { helloBody, json } from "./_test_raw_peer.ts";
import { ScriptedTransport } from "./_test_scripted_transport.ts";
import { type Channel, openChannel } from "./channel.ts";
import type { Envelope } from "./envelope.ts";

const RUN = 200;

Deno.test("channel: answers to a long read of calls leave before the whole read is dispatched", async () => {
  let handled = 0;
  /** For each RESULT written: how many calls had been handled when it was written. */
  const handledAtWrite: number[] = [];
  const transport = new ScriptedTransport((frames) => {
    for (const frame of frames) if (frame.kind === "result") handledAtWrite.push(handled);
  });
  const opening = openChannel(transport, {
    codec: jsonCodec(),
    handlers: { add: ({ a, b }: { a: number; b: number }) => (handled++, a + b) },
  });
  transport.deliver([
    { kind: "hello", body: helloBody() },
    ...Array.from({ length: RUN }, (_, i): Envelope => ({
      kind: "call",
      id: i + 1,
      flags: 0,
      timeoutMs: 0,
      method: "add",
      body: json({ a: i, b: 1 }),
    })),
  ]);
  const channel = await opening;
  while (handledAtWrite.length < RUN) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.equal(handled, RUN);
  assert.ok(
    handledAtWrite[0] < RUN / 2,
    `the first answer left after ${handledAtWrite[0]} of ${RUN} calls were handled`,
  );
  await channel.abort();
});

Deno.test("channel: callers whose results arrive in one long read send their next calls during it", async () => {
  /** For each CALL written after the first RUN: how many results the callers had seen. */
  const seenAtWrite: number[] = [];
  let seen = 0;
  const sent: number[] = [];
  const transport = new ScriptedTransport((frames) => {
    for (const frame of frames) {
      if (frame.kind !== "call") continue;
      sent.push(frame.id);
      if (frame.id > RUN) seenAtWrite.push(seen);
    }
  });
  const opening = openChannel<{ add(p: { a: number; b: number }): number }>(transport, {
    codec: jsonCodec(),
  });
  transport.deliver([{ kind: "hello", body: helloBody() }]);
  const channel: Channel<{ add(p: { a: number; b: number }): number }> = await opening;
  // RUN callers, each making a second call as soon as its first one returns.
  const callers = Array.from({ length: RUN }, async (_, i) => {
    await channel.remote.add({ a: i, b: 1 });
    seen++;
    return channel.remote.add({ a: i, b: 2 }).catch(() => {});
  });
  while (sent.length < RUN) await new Promise((resolve) => setTimeout(resolve, 1));
  transport.deliver(
    Array.from({ length: RUN }, (_, i): Envelope => ({
      kind: "result",
      id: i + 1,
      body: json(i + 1),
    })),
  );
  while (seenAtWrite.length < RUN) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.ok(
    seenAtWrite[0] < RUN / 2,
    `the first next call left after ${seenAtWrite[0]} of ${RUN} results were seen`,
  );
  await channel.abort();
  await Promise.all(callers);
});
