// The sequence vectors of testdata/protocol/vectors.json, played against a real conduit
// channel: a scripted peer sends each step's bytes over a transport pair and checks that the
// channel answers with exactly the expected frames, then closes or stays open as the vector
// says. interop/python/test_vectors.py plays the same vectors against the Python peer.

import assert from "node:assert/strict";
import { jsonCodec } from "../codecs/json.ts";
import { RawPeer } from "./_test_raw_peer.ts";
import { type TransportKind, transportKinds } from "../transports/_test_pairs.ts";
import { Channel } from "./channel.ts";
import type { Envelope } from "./envelope.ts";
import type { CallContext } from "./types.ts";
import type { Expect, Sequence } from "../testdata/protocol/_sequences.ts";

interface Sequences {
  implementation: {
    codec: string;
    maxFrameBytes: number;
    maxInFlight: number;
    streamWindowBytes: number;
  };
  service: Record<string, string>;
  cases: Sequence[];
}

const { sequences }: { sequences: Sequences } = JSON.parse(
  await Deno.readTextFile(new URL("../testdata/protocol/vectors.json", import.meta.url)),
);

const fromHex = (hex: string) =>
  new Uint8Array(hex.match(/../g)?.map((byte) => parseInt(byte, 16)) ?? []);
const text = new TextDecoder();

/** The methods of `sequences.service`, as conduit handlers. */
function service() {
  const log: unknown[] = [];
  const untilCancelled = (ctx: CallContext) =>
    new Promise<never>((_, reject) =>
      ctx.signal.addEventListener("abort", () => reject(ctx.signal.reason))
    );
  return {
    echo: (value: unknown) => value,
    async *items(list: unknown[]) {
      for (const item of list) yield item;
    },
    note(value: unknown) {
      log.push(value);
    },
    notes: () => [...log],
    park: (_: unknown, ctx: CallContext) => untilCancelled(ctx),
    async hold(items: AsyncIterable<unknown>, ctx: CallContext) {
      for await (const _ of items) { /* read to the end */ }
      return await untilCancelled(ctx);
    },
    async sum(items: AsyncIterable<number>) {
      let total = 0;
      for await (const item of items) total += item;
      return total;
    },
    fail(causes: number) {
      let cause: Error | undefined;
      for (let level = causes; level >= 1; level--) {
        cause = new Error(`level ${level}`, cause && { cause });
      }
      throw new Error("level 0", cause && { cause });
    },
  };
}

Deno.test("sequence vectors: the service lists every method the harness serves", () => {
  assert.deepEqual(Object.keys(sequences.service).sort(), Object.keys(service()).sort());
  assert.equal(sequences.implementation.codec, "json");
  assert.ok(sequences.cases.length >= 30);
});

function jsonBody(frame: Envelope): Record<string, unknown> {
  const body = (frame as { body: Uint8Array }).body;
  return body.length === 0 ? {} : JSON.parse(text.decode(body));
}

function causeDepth(error: Record<string, unknown> | undefined): number {
  return error === undefined ? 0 : 1 + causeDepth(error.cause as Record<string, unknown>);
}

/** Asserts that `frame` matches every field `expect` gives. */
function assertMatches(frame: Envelope | undefined, expect: Expect, where: string): void {
  assert.ok(frame, `${where}: the channel closed instead of sending ${JSON.stringify(expect)}`);
  assert.equal(frame.kind, expect.kind, `${where}: ${JSON.stringify(frame)}`);
  const fields = frame as Record<string, unknown>;
  if (expect.id !== undefined) assert.equal(fields.id, expect.id, where);
  if (expect.nonce !== undefined) assert.equal(fields.nonce, expect.nonce, where);
  if (expect.receiverId !== undefined) {
    assert.equal(fields.receiverId ?? frame.kind === "result", expect.receiverId, where);
  }
  if (expect.code !== undefined) {
    assert.equal(
      jsonBody(frame).code ?? null,
      expect.code,
      `${where}: ${
        text.decode(
          (frame as { body: Uint8Array }).body,
        )
      }`,
    );
  }
  if (expect.body !== undefined) assert.deepEqual(jsonBody(frame), expect.body, where);
  if (expect.causeDepth !== undefined) {
    assert.equal(causeDepth(jsonBody(frame)), expect.causeDepth, where);
  }
}

/** Generous: only turns a missing frame into a failure instead of a hang (no speed is tested). */
const STUCK_MS = 10_000;

/** The channel's next frame (undefined once it closed); fails if none comes at all. */
async function nextFrame(peer: RawPeer, where: string): Promise<Envelope | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    return await Promise.race([
      peer.next(),
      new Promise<never>((_, reject) => {
        timer = setTimeout(
          () => reject(new Error(`${where}: no frame and no close for ${STUCK_MS} ms`)),
          STUCK_MS,
        );
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

async function play(sequence: Sequence, kind: TransportKind): Promise<void> {
  const pair = await kind.pair();
  const peer = new RawPeer(pair.b);
  const { codec: _, ...limits } = sequences.implementation;
  const channel = new Channel(pair.a, { codec: jsonCodec(), handlers: service(), ...limits });
  channel.opened.catch(() => {});
  try {
    for (const [index, step] of sequence.steps.entries()) {
      const where = `${sequence.name} step ${index}`;
      if ("send" in step) await peer.sendBytes(fromHex(step.send));
      else assertMatches(await nextFrame(peer, where), step.expect, where);
    }
    if (sequence.then === "closed") {
      const extra = await nextFrame(peer, `${sequence.name} end`);
      assert.equal(extra, undefined, `${sequence.name}: a frame after the last: ${extra?.kind}`);
    }
  } finally {
    await peer.close();
    await channel.close();
    await pair.cleanup();
  }
}

for (const kind of transportKinds) {
  for (const sequence of sequences.cases) {
    Deno.test(`sequence vector ${sequence.name} (${kind.name})`, () => play(sequence, kind));
  }
}
