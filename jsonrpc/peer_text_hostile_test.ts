// A JSON-RPC peer's text in conduit's own messages: an MCP cancel's reason, and the values
// conduit quotes when it reports what it could not read, have their control characters, line
// separators and bidi overrides escaped; a remote error's message stays the remote handler's.

import assert from "node:assert/strict";
import type { CallContext } from "./mod.ts";
import { setup } from "./_test_raw_peer.ts";

/** What a terminal acts on rather than shows (line breaks, escapes, bidi overrides). */
// deno-lint-ignore no-control-regex
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** Text that tries to start a log line of its own and turn the rest of it around. */
const FORGED = "stop\nconduit: all is well \x1b[31m\u2028\u202e";

function assertPrintable(message: string): void {
  assert.ok(!UNPRINTABLE.test(message), `unescaped: ${JSON.stringify(message)}`);
}

Deno.test("jsonrpc peer text: an MCP cancel's reason reaches the handler's signal escaped", async () => {
  const reason = Promise.withResolvers<Error>();
  const { channel, peer } = await setup({
    dialect: "mcp",
    handlers: {
      wait: (_params: unknown, ctx: CallContext) =>
        new Promise((_, reject) =>
          ctx.signal.addEventListener("abort", () => {
            reason.resolve(ctx.signal.reason);
            reject(ctx.signal.reason);
          })
        ),
    },
  });
  await peer.send({ jsonrpc: "2.0", id: 1, method: "wait" });
  await new Promise((resolve) => setTimeout(resolve, 10));
  await peer.send({
    jsonrpc: "2.0",
    method: "notifications/cancelled",
    params: { requestId: 1, reason: FORGED },
  });
  const error = await reason.promise;
  assert.match(error.message, /The caller cancelled "wait": stop\\u000aconduit/);
  assertPrintable(error.message);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc peer text: values quoted in reports and errors are escaped, beyond JSON's own", async () => {
  const { channel, peer, errors } = await setup<{ work(p: object): string }>();
  // JSON.stringify leaves U+2028 and the bidi overrides as they are.
  const pending = channel.remote.work({}).then(() => undefined, (error: Error) => error);
  const request = await peer.next() as { id: number };
  await peer.send({ jsonrpc: "2.0", id: request.id, error: { code: 1, message: [FORGED] } });
  const error = await pending;
  assert.match(String(error?.message), /whose message is no string: \["stop\\nconduit/);
  assertPrintable(String(error?.message));
  await peer.send({ jsonrpc: FORGED, id: 9, method: "work" });
  await peer.next();
  assert.equal(errors.length, 1);
  assert.match(errors[0].message, /"jsonrpc" is "stop\\nconduit/);
  assertPrintable(errors[0].message);
  await channel.close();
  await peer.close();
});

Deno.test("jsonrpc peer text: a remote error's message is the remote handler's, kept verbatim", async () => {
  const { channel, peer } = await setup<{ work(p: object): string }>();
  const pending = channel.remote.work({}).then(() => undefined, (error: Error) => error);
  const request = await peer.next() as { id: number };
  await peer.send({ jsonrpc: "2.0", id: request.id, error: { code: 1, message: FORGED } });
  assert.equal((await pending)?.message, FORGED);
  await channel.close();
  await peer.close();
});
