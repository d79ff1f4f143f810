import assert from "node:assert/strict";
import { buildServeBundle, BUNDLE } from "../.ci/serve_bundle.ts";
import { spawnWorker } from "./spawn_worker.ts";
import type { ErrorsApi } from "./_testdata/errors_worker.ts";

Deno.test("the pre-built worker runtime is what its sources build (else: deno task bundle)", async () => {
  const committed = await Deno.readTextFile(BUNDLE);
  assert.ok(
    committed === await buildServeBundle(),
    "workers/_serve.bundle.js is stale: run `deno task bundle`",
  );
});

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
