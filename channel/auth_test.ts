import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { encodeFrame, FrameDecoder } from "../framing/frame_decoder.ts";
import { concat } from "../framing/_test_util.ts";
import { AUTH_KIND, authProof, toHex } from "../protocol/auth.ts";
import { parseGoodbye } from "../protocol/handshake.ts";
import { memory, tcp, tls, type TransportKind, unix } from "../transports/_test_pairs.ts";
import { connectTls, listenTls } from "../transports/tcp.ts";
import type { Transport } from "../transports/types.ts";
import { LSP_DIALECT } from "../jsonrpc/dialect.ts";
import { jsonRpcWire } from "./_jsonrpc_wire.ts";
import { helloBody } from "./_test_raw_peer.ts";
import { WIRE_OPTION } from "./_wire.ts";
import { openChannel } from "./channel.ts";
import { AuthenticationError } from "./errors.ts";
import { serve } from "./serve.ts";

const codec = jsonCodec();
const SECRET = "s3cret-shared-by-both-ends-0123456789";

/** Records what is written to a transport, in order. */
function recording(transport: Transport): { transport: Transport; written: Uint8Array[] } {
  const written: Uint8Array[] = [];
  const inner = transport.writable;
  const writer = inner.getWriter();
  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      written.push(chunk.slice());
      return writer.write(chunk);
    },
    close: () => writer.close(),
    abort: (reason) => writer.abort(reason),
  });
  return {
    written,
    transport: {
      readable: transport.readable,
      writable,
      close: () => transport.close(),
      abort: (reason) => transport.abort(reason),
      [Symbol.asyncDispose]: () => transport.close(),
    },
  };
}

function contains(haystack: Uint8Array, needle: Uint8Array): boolean {
  outer: for (let i = 0; i + needle.length <= haystack.length; i++) {
    for (let j = 0; j < needle.length; j++) if (haystack[i + j] !== needle[j]) continue outer;
    return true;
  }
  return false;
}

/** Reads raw frames (AUTH included) from a transport. */
class FrameTap {
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #decoder = new FrameDecoder();

  constructor(transport: Transport) {
    this.#reader = transport.readable.getReader();
  }

  /** The next frame's payload, or undefined at the end. */
  async next(): Promise<Uint8Array | undefined> {
    for (;;) {
      const frame = this.#decoder.next();
      if (frame !== undefined) return frame.slice();
      const { value, done } = await this.#reader.read().catch(() => ({
        value: undefined,
        done: true,
      }));
      if (done) return undefined;
      this.#decoder.push(value!);
    }
  }

  /** Reads up to the GOODBYE and returns its code. */
  async goodbyeCode(): Promise<string | undefined> {
    for (;;) {
      const frame = await this.next();
      if (frame === undefined) return undefined;
      if (frame[0] === 0x02) return parseGoodbye(frame.subarray(1)).code;
    }
  }

  release(): void {
    this.#reader.releaseLock();
  }
}

async function send(transport: Transport, payloads: Uint8Array[]): Promise<void> {
  const writer = transport.writable.getWriter();
  await writer.write(concat(payloads.map((payload) => encodeFrame(payload)))).catch(() => {});
  writer.releaseLock();
}

function helloFrame(nonce?: Uint8Array): Uint8Array {
  const body = helloBody(
    nonce === undefined ? {} : { auth: { method: "hmac-sha256", nonce: toHex(nonce) } },
  );
  return new Uint8Array([0x01, ...body]);
}

function pair(kind: TransportKind) {
  return kind.pair();
}

for (const kind of [memory, unix, tcp, tls]) {
  Deno.test(`auth (${kind.name}): the same secret opens, and the secret never crosses the wire`, async () => {
    const { a, b, cleanup } = await pair(kind);
    const handlers = { add: ({ x, y }: { x: number; y: number }) => x + y };
    const left = recording(a);
    const right = recording(b);
    const [server, client] = await Promise.all([
      openChannel(left.transport, { codec, handlers, auth: { secret: SECRET } }),
      openChannel<typeof handlers>(right.transport, {
        codec,
        auth: { secret: new TextEncoder().encode(SECRET) },
      }),
    ]);
    assert.equal(await client.remote.add({ x: 2, y: 3 }), 5);
    await Promise.all([client.close(), server.closed]);
    const wire = concat([...left.written, ...right.written]);
    assert.ok(!contains(wire, new TextEncoder().encode(SECRET)));
    assert.ok(!contains(wire, new TextEncoder().encode(SECRET.slice(0, 8))));
    await cleanup();
  });
}

for (const kind of [memory, tls]) {
  Deno.test(`auth (${kind.name}): a wrong secret fails both sides with AuthenticationError; no handler runs`, async () => {
    const { a, b, cleanup } = await pair(kind);
    let ran = false;
    const results = await Promise.allSettled([
      openChannel(a, { codec, handlers: { hit: () => ran = true }, auth: { secret: SECRET } }),
      openChannel(b, { codec, auth: { secret: SECRET + "x" } }),
    ]);
    for (const result of results) {
      assert.equal(result.status, "rejected");
      const error = (result as PromiseRejectedResult).reason;
      assert.ok(error instanceof AuthenticationError, String(error));
      assert.equal(error.code, "auth_failed");
      assert.ok(!error.message.includes(SECRET.slice(0, 6)));
    }
    assert.equal(ran, false);
    await cleanup();
  });
}

Deno.test("auth: a secret on one side only fails both sides with auth_required", async () => {
  for (const secretOn of ["server", "client"]) {
    const { a, b, cleanup } = await pair(memory);
    const results = await Promise.allSettled([
      openChannel(a, { codec, ...(secretOn === "server" && { auth: { secret: SECRET } }) }),
      openChannel(b, { codec, ...(secretOn === "client" && { auth: { secret: SECRET } }) }),
    ]);
    for (const result of results) {
      const error = (result as PromiseRejectedResult).reason;
      assert.ok(error instanceof AuthenticationError, `${secretOn}: ${error}`);
      assert.equal(error.code, "auth_required");
    }
    await cleanup();
  }
});

Deno.test("auth: a recorded handshake replayed to the server fails (its nonce is new)", async () => {
  let calls = 0;
  const handlers = { add: ({ x, y }: { x: number; y: number }) => (calls++, x + y) };
  // A real client's bytes, recorded: HELLO, AUTH, a CALL, GOODBYE.
  const first = await pair(memory);
  const recorded = recording(first.b);
  const [server, client] = await Promise.all([
    openChannel(first.a, { codec, handlers, auth: { secret: SECRET } }),
    openChannel<typeof handlers>(recorded.transport, { codec, auth: { secret: SECRET } }),
  ]);
  assert.equal(await client.remote.add({ x: 1, y: 1 }), 2);
  await Promise.all([client.close(), server.closed]);
  await first.cleanup();
  assert.equal(calls, 1);

  const second = await pair(memory);
  const replayed = openChannel(second.a, { codec, handlers, auth: { secret: SECRET } });
  const tap = new FrameTap(second.b);
  const writer = second.b.writable.getWriter();
  await writer.write(concat(recorded.written)).catch(() => {});
  writer.releaseLock();
  await assert.rejects(replayed, (error) => {
    assert.ok(error instanceof AuthenticationError);
    assert.equal(error.code, "auth_failed");
    return true;
  });
  assert.equal(await tap.goodbyeCode(), "auth_failed");
  assert.equal(calls, 1); // the replayed CALL reached no handler
  tap.release();
  await second.cleanup();
});

Deno.test("auth: garbage, a CALL, a short or guessed AUTH or an oversized frame in the auth step fail it; no handler runs", async () => {
  let ran = false;
  const handlers = { hit: () => ran = true };
  const call = new Uint8Array([0x10, 1, 0, 0, 3, ...new TextEncoder().encode("hit")]);
  const cases: Array<[string, (server: Uint8Array) => Promise<Uint8Array[]>, string]> = [
    ["a CALL instead of AUTH", () => Promise.resolve([call]), "auth_failed"],
    ["a short AUTH", () => Promise.resolve([new Uint8Array([AUTH_KIND, 1, 2, 3])]), "auth_failed"],
    ["random bytes", () => Promise.resolve([crypto.getRandomValues(new Uint8Array(40))]), ""],
    [
      "a guessed proof",
      () => Promise.resolve([new Uint8Array(33).fill(AUTH_KIND, 0, 1)]),
      "auth_failed",
    ],
    [
      "a frame over 1024 bytes",
      () => Promise.resolve([new Uint8Array(2000).fill(AUTH_KIND, 0, 1)]),
      "protocol_error",
    ],
  ];
  for (const [name, script, code] of cases) {
    const { a, b, cleanup } = await pair(memory);
    const opening = openChannel(a, { codec, handlers, auth: { secret: SECRET } });
    const tap = new FrameTap(b);
    const serverHello = await tap.next();
    assert.equal(serverHello?.[0], 0x01, name);
    const nonce = crypto.getRandomValues(new Uint8Array(32));
    await send(b, [helloFrame(nonce), ...await script(serverHello!)]);
    const error = await opening.then(() => undefined, (error) => error);
    assert.ok(error !== undefined, `${name}: the channel opened`);
    if (code === "auth_failed") {
      assert.ok(error instanceof AuthenticationError, `${name}: ${error}`);
    }
    const goodbye = await tap.goodbyeCode();
    if (code !== "") assert.equal(goodbye, code, name);
    else {assert.ok(
        goodbye === "auth_failed" || goodbye === "protocol_error",
        `${name}: ${goodbye}`,
      );}
    tap.release();
    await cleanup();
  }
  assert.equal(ran, false);
});

Deno.test("auth: a peer echoing the server's nonce (a reflection) is refused", async () => {
  const { a, b, cleanup } = await pair(memory);
  const opening = openChannel(a, { codec, auth: { secret: SECRET } });
  const tap = new FrameTap(b);
  const hello = JSON.parse(new TextDecoder().decode((await tap.next())!.subarray(1)));
  const nonce = Uint8Array.from(hello.auth.nonce.match(/../g), (hex: string) => parseInt(hex, 16));
  // The proof the server would send for these nonces, had it not refused: a reflection attack
  // would send it back.
  const proof = await authProof(new TextEncoder().encode("unknown"), nonce, nonce);
  await send(b, [helloFrame(nonce), new Uint8Array([AUTH_KIND, ...proof])]);
  await assert.rejects(opening, AuthenticationError);
  assert.equal(await tap.goodbyeCode(), "auth_failed");
  tap.release();
  await cleanup();
});

Deno.test("auth: serve() over TLS authenticates each client; a wrong secret is refused, the server goes on", async () => {
  const read = (name: string) =>
    Deno.readTextFile(new URL(`../testdata/tls/${name}`, import.meta.url));
  const listener = listenTls({ cert: await read("server.pem"), key: await read("server.key") });
  const { port } = listener.addr as Deno.NetAddr;
  const caCerts = [await read("ca.pem")];
  const handlers = { ping: () => "pong" };
  const errors: unknown[] = [];
  const server = serve(listener, {
    codec,
    handlers,
    auth: { secret: SECRET },
    onError: (error) => errors.push(error),
  });
  await assert.rejects(
    (async () =>
      openChannel(await connectTls({ port, caCerts }), { codec, auth: { secret: "wrong" } }))(),
    AuthenticationError,
  );
  await assert.rejects(
    (async () => openChannel(await connectTls({ port, caCerts }), { codec }))(),
    AuthenticationError,
  );
  const good = await openChannel<typeof handlers>(await connectTls({ port, caCerts }), {
    codec,
    auth: { secret: SECRET },
  });
  assert.equal(await good.remote.ping(), "pong");
  await server.close();
  await good.closed;
  assert.ok(errors.some((error) => (error as Error).cause instanceof AuthenticationError));
});

Deno.test("auth: an empty secret is refused", () => {
  const [a] = [new TransformStream<Uint8Array, Uint8Array>()];
  const transport = { readable: a.readable, writable: a.writable } as unknown as Transport;
  return assert.rejects(
    (async () => await openChannel(transport, { codec, auth: { secret: "" } }))(),
    TypeError,
  );
});

Deno.test("auth: a wire without a handshake (JSON-RPC) refuses a secret instead of ignoring it", async () => {
  const { a, b, cleanup } = await pair(memory);
  const wire = jsonRpcWire({
    framing: "content-length",
    dialect: LSP_DIALECT,
    onProtocolError: () => {},
  });
  await assert.rejects(
    async () =>
      await openChannel(a, { codec, auth: { secret: SECRET }, [WIRE_OPTION]: wire } as never),
    TypeError,
  );
  await b.close();
  await cleanup();
});
