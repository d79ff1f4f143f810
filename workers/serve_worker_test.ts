import assert from "node:assert/strict";
import { spawnWorker } from "./spawn_worker.ts";
import type { ErrorsApi } from "./_testdata/errors_worker.ts";
import type { TransferApi } from "./_testdata/transfer_worker.ts";
import type { RootWorkerApi } from "./_testdata/root_worker.ts";
import { rawCodec } from "../codecs/raw.ts";

Deno.test("a worker module tells the runtime's errors apart with the classes it imports", async () => {
  await using worker = await spawnWorker<ErrorsApi>(
    new URL("./_testdata/errors_worker.ts", import.meta.url),
  );
  assert.deepEqual(await worker.remote.classify(undefined), {
    name: "MethodNotFoundError",
    MethodNotFoundError: true,
    RemoteError: true,
    ConduitError: true,
    TransportClosedError: false,
  });
});

Deno.test("a worker module's transfer() reaches the runtime's channel: echoed params are taken back", async () => {
  await using worker = await spawnWorker<TransferApi>(
    new URL("./_testdata/transfer_worker.ts", import.meta.url),
    { codec: rawCodec() },
  );
  const blob = new Uint8Array(1024 * 1024);
  for (let fill = 1; fill <= 4; fill++) {
    const echoed = await worker.remote.echo(blob.fill(fill));
    assert.ok(echoed.length === blob.length && echoed.every((byte) => byte === fill));
  }
  // Each 1 MiB param spanned reads (a buffer of its own): once its echo was written, the
  // runtime's channel took it back, which it does only for bytes given up with transfer().
  assert.deepEqual(await worker.remote.takenBack(new Uint8Array(0)), new Uint8Array([4]));
});

Deno.test("the serveWorker of the package root serves, loading the worker's side on its call", async () => {
  await using worker = await spawnWorker<RootWorkerApi>(
    new URL("./_testdata/root_worker.ts", import.meta.url),
  );
  assert.equal(await worker.remote.ping(), "pong");
});

Deno.test("serveWorker: a second call in one worker is refused, the first channel serves on", async () => {
  const url = new URL("./_testdata/serve_twice_worker.ts", import.meta.url);
  for (const thread of [false, true]) {
    await using worker = await spawnWorker<{ second(): string }>(url, { thread });
    assert.match(await worker.remote.second(), /^ConduitError: serveWorker\(\) was called again/);
  }
});

Deno.test("serveWorker: a call that could not connect made no channel, so a retry serves", async () => {
  const url = new URL("./_testdata/serve_retry_worker.ts", import.meta.url);
  await using worker = await spawnWorker<{ first(): string }>(url, {
    transport: "unix",
    handshakeTimeout: 20_000,
  });
  // Refused by the worker's permissions (granted for the real socket only), or not there.
  assert.match(await worker.remote.first(), /^(NotCapable|NotFound)$/);
});

Deno.test("serveWorker: refused options let its connection go, so the spawn fails at once", async () => {
  const url = new URL("./_testdata/serve_bad_options_worker.ts", import.meta.url);
  const error = await spawnWorker(url, {
    transport: "unix",
    stderr: "discard",
    handshakeTimeout: 20_000,
    exitTimeout: 100,
  }).then(() => undefined, (e: Error) => e);
  // Not the handshake timeout: the worker's socket closed, and the worker was stopped.
  assert.ok(error instanceof Error, String(error));
  assert.notEqual((error as { code?: string }).code, "handshake_timeout", String(error));
});
