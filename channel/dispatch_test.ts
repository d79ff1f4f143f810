// The answers to the first frames of a long read are written before its last frames are
// dispatched, so two busy peers overlap instead of taking turns. Observed through a transport
// whose sink records how far dispatch had got at each write; no timing involved.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { helloBody, json } from "./_test_raw_peer.ts";
import { ScriptedTransport } from "./_test_scripted_transport.ts";
import { openChannel } from "./channel.ts";
import type { Envelope } from "../protocol/envelope.ts";

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
  // The handshake first, so that our HELLO's write is done: the calls then arrive as one
  // read on an open channel. (Delivered together with the HELLO, the answers would wait for
  // that first write to complete whatever the dispatch does.)
  transport.deliver([{ kind: "hello", body: helloBody() }]);
  const channel = await opening;
  transport.deliver([
    ...Array.from({ length: RUN }, (_, i): Envelope => ({
      kind: "call",
      id: i + 1,
      flags: 0,
      timeoutMs: 0,
      method: "add",
      body: json({ a: i, b: 1 }),
    })),
  ]);
  while (handledAtWrite.length < RUN) await new Promise((resolve) => setTimeout(resolve, 1));
  assert.equal(handled, RUN);
  assert.ok(
    handledAtWrite[0] < RUN / 2,
    `the first answer left after ${handledAtWrite[0]} of ${RUN} calls were handled`,
  );
  await channel.abort();
});
