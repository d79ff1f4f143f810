// What a peer can reach: which of the handler object's functions it can call, and whether the
// stack traces in its errors are kept.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { memoryPair } from "../transports/memory.ts";
import { json, RawPeer } from "./_test_raw_peer.ts";
import { openChannel } from "./channel.ts";
import { MethodNotFoundError, RemoteError } from "./errors.ts";

/** Calls each method of `methods` on a channel serving `handlers`; what each call gave. */
async function callEach(handlers: object, methods: string[]): Promise<Record<string, string>> {
  const [a, b] = memoryPair();
  const [server, client] = await Promise.all([
    openChannel(a, { codec: jsonCodec(), handlers }),
    openChannel<Record<string, (param: unknown) => Promise<unknown>>>(b, { codec: jsonCodec() }),
  ]);
  const outcome: Record<string, string> = {};
  for (const method of methods) {
    outcome[method] = await client.remote[method](null).then(
      (value) => `=${JSON.stringify(value)}`,
      (error) => error instanceof MethodNotFoundError ? "not found" : `threw ${error}`,
    );
  }
  await Promise.all([client.close(), server.closed]);
  return outcome;
}

const OBJECT_PROTOTYPE = [
  "constructor",
  "toString",
  "toLocaleString",
  "valueOf",
  "hasOwnProperty",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "__proto__",
  "__defineGetter__",
  "__lookupGetter__",
];

Deno.test("trust: a class instance serves its class's methods, not its base class's", async () => {
  class Base {
    shutdown(): string {
      return "base";
    }
    shared(): string {
      return "base";
    }
  }
  class Api extends Base {
    own = (): string => "own field";
    hello(): string {
      return "hello";
    }
    override shared(): string {
      return "redeclared";
    }
    get secret(): () => string {
      throw new Error("a getter ran");
    }
  }
  const outcome = await callEach(new Api(), [
    "own",
    "hello",
    "shared",
    "shutdown",
    "secret",
    ...OBJECT_PROTOTYPE,
  ]);
  assert.deepEqual(outcome, {
    own: '="own field"',
    hello: '="hello"',
    shared: '="redeclared"',
    shutdown: "not found",
    secret: "not found",
    ...Object.fromEntries(OBJECT_PROTOTYPE.map((name) => [name, "not found"])),
  });
});

Deno.test("trust: a plain object and an Object.create(null) object serve their own functions", async () => {
  const plain = await callEach({ hello: () => "hi", value: 3 }, [
    "hello",
    "value",
    ...OBJECT_PROTOTYPE,
  ]);
  assert.deepEqual(plain, {
    hello: '="hi"',
    value: "not found",
    ...Object.fromEntries(OBJECT_PROTOTYPE.map((name) => [name, "not found"])),
  });
  const bare = Object.assign(Object.create(null), { hello: () => "bare" });
  assert.deepEqual(await callEach(bare, ["hello", "toString", "constructor"]), {
    hello: '="bare"',
    toString: "not found",
    constructor: "not found",
  });
  // An object made from another plain object serves that prototype's functions, the
  // "class" it was made from, but not Object.prototype's.
  const made = Object.create({ greet: () => "proto" });
  assert.deepEqual(await callEach(made, ["greet", "hasOwnProperty"]), {
    greet: '="proto"',
    hasOwnProperty: "not found",
  });
});

Deno.test("trust: stack traces from an untrusted peer are dropped on receipt", async () => {
  for (const trustPeer of [false, true]) {
    const [a, b] = memoryPair();
    const peer = new RawPeer(b);
    const opening = openChannel<{ go(x: number): number }>(a, { codec: jsonCodec(), trustPeer });
    await peer.handshake();
    const channel = await opening;
    const pending = channel.remote.go(1).catch((e) => e);
    const call = await peer.nextOf("call");
    const stack = "Error: forged\n    at evil (file:///etc/passwd:1:1)";
    await peer.send({
      kind: "error",
      id: call!.id,
      receiverId: true,
      body: json({ name: "Error", message: "m", stack, cause: { name: "E", message: "c", stack } }),
    });
    const error = await pending;
    assert.ok(error instanceof RemoteError);
    assert.equal(error.remoteStack, trustPeer ? stack : undefined);
    assert.equal((error.cause as RemoteError).remoteStack, trustPeer ? stack : undefined);
    await peer.close();
    await channel.closed.catch(() => {});
  }
});
