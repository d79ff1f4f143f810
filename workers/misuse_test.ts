// Misuse of workers is caught where it happens, with a message that says what to do: a remote
// call with more than one param, a worker module imported by its parent, a worker that never
// serves, a permission the worker was not granted.

import assert from "node:assert/strict";
import { rejection } from "./_test_rejection.ts";
import { RemoteError } from "../channel/errors.ts";
import { rawCodec } from "../codecs/raw.ts";
import { leakFreeTest, testEnv } from "./_test_processes.ts";
import type { EchoApi } from "./_testdata/echo_worker.ts";
import { WorkerExitedError } from "./errors.ts";
import { spawnWorker as spawnUnmarked, type SpawnWorkerOptions } from "./spawn_worker.ts";
import type { WorkerHandle } from "./worker_handle.ts";
import { WorkerPool } from "./worker_pool.ts";

const ECHO = new URL("./_testdata/echo_worker.ts", import.meta.url);
const HERE = new URL(import.meta.url).pathname;

/** spawnWorker, with the running test's mark in the worker's environment. */
function spawnWorker<Api extends object>(
  module: URL,
  options: SpawnWorkerOptions = {},
): Promise<WorkerHandle<Api>> {
  return spawnUnmarked<Api>(module, { ...options, env: { ...options.env, ...testEnv() } });
}

leakFreeTest(
  "a remote call with more than one param rejects with a TypeError naming the method",
  async () => {
    await using worker = await spawnWorker<EchoApi>(ECHO, { stderr: "discard" });
    const loose = worker.remote.echo as unknown as (...args: unknown[]) => Promise<unknown>;
    await assert.rejects(loose(1, 2), {
      name: "TypeError",
      message: /^remote\.echo\(\) got 2 as its second argument, .*takes one param/,
    });
    await assert.rejects(
      loose(1, { timeout: 5 }, 3),
      /remote\.echo\(\) was called with 3 arguments/,
    );
    await assert.rejects(loose("a", { b: 1 }), /got an object with "b" as its second argument/);
    // `.catch()` sees it: the call returns a rejected promise rather than throwing.
    const caught = await loose(1, 2).catch((error: Error) => error.message);
    assert.match(String(caught), /^remote\.echo\(\) got 2 as its second argument/);
    // Nothing was sent: the worker still answers, and call options still work.
    assert.equal(await worker.remote.echo(7, { timeout: 5_000 }), 7);

    const pool = new WorkerPool<EchoApi>(ECHO, { size: 1, stderr: "discard", env: testEnv() });
    const pooled = pool.remote.echo as unknown as (...args: unknown[]) => Promise<unknown>;
    await assert.rejects(pooled(1, 2), { name: "TypeError", message: /remote\.echo\(\)/ });
    assert.equal(await pool.remote.echo("ok"), "ok");
    await pool.close();
  },
);

leakFreeTest("a codec factory passed uncalled is refused before a worker starts", async () => {
  const message =
    "codec must be a codec object, got the function rawCodec: pass rawCodec(), not rawCodec";
  const options = { codec: rawCodec } as unknown as SpawnWorkerOptions;
  await assert.rejects(spawnWorker(ECHO, { ...options, stderr: "discard" }), {
    name: "TypeError",
    message,
  });
  await assert.rejects(spawnWorker(ECHO, { ...options, thread: true }), {
    name: "TypeError",
    message,
  });
  assert.throws(() => new WorkerPool(ECHO, { ...options, size: 1, env: testEnv() }), {
    name: "TypeError",
    message,
  });
});

leakFreeTest("a worker that exits without serving says so", async () => {
  const module = new URL("./_testdata/silent_worker.ts", import.meta.url);
  const error = await rejection(spawnWorker(module, { stderr: "discard" }));
  assert.ok(error instanceof WorkerExitedError, String(error));
  assert.equal(error.code, 0);
  assert.ok(error.beforeServing);
  assert.match(
    error.message,
    /exited with code 0 before it served: did the module call serveWorker\(\)\?/,
  );
});

leakFreeTest("a permission error names the spawnWorker grant that is missing", async () => {
  // Denied inside a handler: the call's RemoteError says what to grant.
  const program = new URL("./_testdata/permission_worker.ts", import.meta.url);
  const worker = await spawnWorker<{ read(path: string): Promise<string> }>(program, {
    stderr: "discard",
  });
  const denied = await rejection(worker.remote.read(HERE));
  assert.ok(denied instanceof RemoteError, String(denied));
  assert.equal(denied.name, "NotCapable");
  assert.ok(
    denied.message.endsWith(
      `grant it to the worker with spawnWorker(module, { permissions: { read: [${
        JSON.stringify(HERE)
      }] } })`,
    ),
    denied.message,
  );
  await worker.close();

  // Denied before it served: the worker's exit says what to grant.
  const reader = new URL("./_testdata/read_at_start_worker.ts", import.meta.url);
  const exited = await rejection(spawnWorker(reader, { stderr: "discard", args: [HERE] }));
  assert.ok(exited instanceof WorkerExitedError, String(exited));
  assert.equal(exited.code, 1);
  assert.match(exited.message, /exited with code 1 before it served/);
  assert.ok(
    exited.message.includes(`permissions: { read: [${JSON.stringify(HERE)}] }`),
    exited.message,
  );
  // With the grant it starts.
  await using granted = await spawnWorker<{ length(): number }>(reader, {
    stderr: "discard",
    args: [HERE],
    permissions: { read: [HERE] },
  });
  assert.ok(await granted.remote.length() > 0);
});

leakFreeTest("a parent that imports a value from its worker module does not serve", async () => {
  const parent = new URL("./_testdata/importing_parent.ts", import.meta.url);
  for (const flags of [["--allow-run"], ["-A"]]) {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", ...flags, parent.pathname],
      env: testEnv(),
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).output();
    const err = new TextDecoder().decode(stderr);
    assert.equal(code, 1, err);
    // No protocol bytes on the terminal, and a message that says what happened.
    assert.equal(stdout.length, 0);
    assert.match(err, /serveWorker\(\) was called in a process that spawnWorker did not start/);
    assert.match(err, /import only its type/);
  }
});

leakFreeTest("a relative module string is refused; a URL or an absolute path works", async () => {
  const message =
    /"\.\/_testdata\/echo_worker\.ts" is a relative path: .*Pass new URL\("\.\/_testdata\/echo_worker\.ts", import\.meta\.url\)/;
  await assert.rejects(spawnUnmarked("./_testdata/echo_worker.ts"), { name: "TypeError", message });
  await assert.rejects(spawnUnmarked("echo_worker.ts"), /Pass new URL\("\.\/echo_worker\.ts"/);
  assert.throws(() => new WorkerPool("./_testdata/echo_worker.ts"), { name: "TypeError", message });
  await using worker = await spawnUnmarked<EchoApi>(ECHO.pathname, {
    stderr: "discard",
    env: testEnv(),
  });
  assert.equal(await worker.remote.echo("absolute"), "absolute");
});

leakFreeTest("a worker's call may be read after an await; misreading it is catchable", async () => {
  await using worker = await spawnWorker<EchoApi>(ECHO, { stderr: "discard" });
  const stream = worker.remote.count(4);
  const misread = worker.remote.echo("one value") as unknown as AsyncIterable<unknown>;
  const awaitedStream = worker.remote.count(2);
  const dying = worker.remote.sleep(60_000);
  await worker.remote.echo("an await in between");
  assert.deepEqual(await Array.fromAsync(stream), [1, 2, 3, 4]);
  await assert.rejects(Array.fromAsync(misread), /returned a single value, not a stream/);
  await assert.rejects(Promise.resolve(awaitedStream), /returned a stream/);
  await worker.kill();
  await assert.rejects(Promise.resolve(dying), WorkerExitedError);
});

leakFreeTest(
  "options that do not fit the worker's runtime are a TypeError naming them",
  async () => {
    const cases: [SpawnWorkerOptions, RegExp][] = [
      [{ runtime: "node", permissions: { read: true } }, /permissions are Deno's.*runtimeArgs/],
      [{ runtime: "bun", denoArgs: ["--v8-flags=--jitless"] }, /denoArgs are for Deno workers/],
      [{ runtime: "deno", runtimeArgs: ["--permission"] }, /runtimeArgs is for Node and Bun/],
      [{ runtime: "python" as "node" }, /runtime must be "deno", "node" or "bun"/],
      [{ thread: true, runtime: "node" }, /^runtime\b.* cannot be used with thread: true/],
    ];
    for (const [options, message] of cases) {
      await assert.rejects(spawnWorker(ECHO, options), (error: unknown) => {
        assert.ok(error instanceof TypeError, String(error));
        assert.match(error.message, message);
        return true;
      });
    }
    await assert.rejects(
      spawnUnmarked({ command: "true" }, { runtime: "node" }),
      /runtime does not apply to a WorkerCommand/,
    );
    await assert.rejects(
      spawnWorker(new URL("https://example.com/w.ts"), { runtime: "node" }),
      /A node worker module must be a local file, got https:\/\/example.com\/w.ts/,
    );
  },
);
