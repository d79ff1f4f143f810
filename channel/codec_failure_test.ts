// A value a codec cannot carry fails the call whose value it is, and the message says whose:
// the method, and which side's handler or caller made the value.

import assert from "node:assert/strict";
import { structuredCodec } from "../codecs/structured.ts";
import { memoryPair } from "../transports/memory.ts";
import type { CallContext } from "./call_context.ts";
import { openChannel } from "./channel.ts";
import { RemoteError } from "./errors.ts";
import { CodecError } from "../errors.ts";

/** What `setTimeout` returns under Node's types: an object no codec can carry. */
class Timeout {}

interface Parent {
  log(line: string): void;
}
interface Worker {
  process(input: string): string;
  items(count: number): AsyncIterable<unknown>;
}

const RESULT =
  /^The peer's handler of "log" returned a result that cannot be sent: structured codec could not encode: \$ is an instance of Timeout/;

Deno.test("codec failure: a result that cannot be sent names its method and side, through a second call", async () => {
  const [a, b] = memoryPair();
  const [parent, worker] = await Promise.all([
    openChannel<Worker>(a, {
      codec: structuredCodec(),
      // A `void` handler that lets a Timeout through.
      handlers: { log: (_line: string) => new Timeout() as unknown as void } satisfies Parent,
    }),
    openChannel<Parent>(b, {
      codec: structuredCodec(),
      handlers: {
        async process(input: string, ctx?: CallContext<Parent>): Promise<string> {
          await ctx!.channel.remote.log(`processing ${input}`);
          return input;
        },
        async *items(count: number) {
          for (let i = 0; i < count; i++) yield i === 1 ? new Timeout() : i;
        },
      },
    }),
  ]);
  // The call whose result failed: the worker's call of the parent's `log`.
  const direct = await worker.remote.log("x").then(() => undefined, (error) => error);
  assert.ok(direct instanceof RemoteError, String(direct));
  assert.equal(direct.name, "CodecError");
  assert.match(direct.message, RESULT);
  // The parent's call of a different method, whose handler let that failure through, says
  // which method's result it was.
  const passedOn = await parent.remote.process("a").then(() => undefined, (error) => error);
  assert.ok(passedOn instanceof RemoteError, String(passedOn));
  assert.equal(passedOn.name, "CodecError");
  assert.match(passedOn.message, RESULT);
  // A stream item.
  await assert.rejects(Array.fromAsync(parent.remote.items(3)), {
    name: "CodecError",
    message: `The peer's handler of "items" yielded an item that cannot be sent: ` +
      "structured codec could not encode: $ is an instance of Timeout, which cannot cross",
  });
  // A param this side cannot send fails its call here, naming it.
  const param = await worker.remote.log(new Timeout() as unknown as string).then(
    () => undefined,
    (error) => error,
  );
  assert.ok(param instanceof CodecError, String(param));
  assert.equal(
    param.message,
    `The param of the call to "log" cannot be sent: ` +
      "structured codec could not encode: $ is an instance of Timeout, which cannot cross",
  );
  await Promise.all([parent.close(), worker.close()]);
});
