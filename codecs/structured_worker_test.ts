// The structured codec between a parent and a real worker process, through the public
// spawnWorker / serveWorker API.

import assert from "node:assert/strict";
import { RemoteError } from "../channel/errors.ts";
import { CodecError } from "../errors.ts";
import { spawnWorker } from "../workers/mod.ts";
import { structuredCodec } from "./structured.ts";
import type { StructuredWorkerApi } from "./_testdata/structured_worker.ts";

const WORKER = new URL("./_testdata/structured_worker.ts", import.meta.url);

Deno.test("codec/structured: values keep their types through a worker process", async () => {
  await using worker = await spawnWorker<StructuredWorkerApi>(WORKER, {
    codec: structuredCodec({ stack: true }),
  });
  const value = {
    at: new Date("2024-05-06T07:08:09.010Z"),
    byName: new Map<string, unknown>([["a", 1n << 70n], ["b", new Set([undefined, null])]]),
    samples: new Float64Array([0.5, -0, NaN]),
    bytes: new Uint8Array([1, 2, 3]),
    missing: undefined,
    none: null,
  };
  assert.deepStrictEqual(await worker.remote.echo(value), value);
  assert.equal(await worker.remote.echo(undefined), undefined);
  const error = Object.assign(new RangeError("too big"), { code: "E_SIZE" });
  const back = await worker.remote.echo({ error }) as { error: RemoteError };
  assert.ok(back.error instanceof RemoteError);
  assert.equal(back.error.name, "RangeError");
  assert.equal(back.error.code, "E_SIZE");
  assert.equal(back.error.remoteStack, error.stack);
});

Deno.test("codec/structured: a value that cannot cross fails the call with its path", async () => {
  await using worker = await spawnWorker<StructuredWorkerApi>(WORKER, {
    codec: structuredCodec({ stack: true }),
    stderr: "discard",
  });
  // Ours to send: the encode fails here, before anything is written.
  await assert.rejects(
    () => worker.remote.echo({ list: [0, { f: () => 1 }] }),
    (err) => err instanceof CodecError && err.message.includes("$.list[1].f is a function"),
  );
  // The worker's result: its encode fails there, and the call fails here, naming the path.
  await assert.rejects(
    () => worker.remote.withCallback(),
    (err) =>
      err instanceof RemoteError && err.name === "CodecError" &&
      err.message.includes("$.items[0].callback is a function"),
  );
  // Neither broke the channel.
  assert.equal(await worker.remote.echo(7), 7);
});

Deno.test("codec/structured: a stream of Uint8Array chunks arrives as Uint8Array", async () => {
  await using worker = await spawnWorker<StructuredWorkerApi>(WORKER, {
    codec: structuredCodec(),
  });
  let index = 0;
  for await (const chunk of worker.remote.chunks({ count: 64, bytes: 64 * 1024 })) {
    assert.ok(chunk instanceof Uint8Array);
    assert.equal(chunk.length, 64 * 1024);
    assert.ok(chunk.every((byte) => byte === index));
    index++;
  }
  assert.equal(index, 64);
});
