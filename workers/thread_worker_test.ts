// spawnWorker(…, { thread: true }) and serveWorker in a real Web Worker: the same typed API,
// streams, cancellation and errors as a process worker. Deno's sanitizers check that a
// closed thread leaves no op or resource behind.

import assert from "node:assert/strict";
import { rejection } from "./_test_rejection.ts";
import { HandshakeError, RemoteError } from "../channel/errors.ts";
import type { EchoApi, ParentApi } from "./_testdata/echo_worker.ts";
import type { SlowStartApi } from "./_testdata/slow_start_worker.ts";
import { type GoodbyeApi, waitForCancel } from "./_testdata/goodbye_worker.ts";
import { spawnWorker } from "./spawn_worker.ts";
import { WorkerExitedError } from "./errors.ts";
import { threadLeakFreeTest } from "./_test_threads.ts";

const ECHO = new URL("./_testdata/echo_worker.ts", import.meta.url);
const GOODBYE = new URL("./_testdata/goodbye_worker.ts", import.meta.url);
const parent: ParentApi = { double: (x) => 2 * x };

function spawnEcho() {
  return spawnWorker<EchoApi>(ECHO, { thread: true, handlers: parent });
}

threadLeakFreeTest(
  "thread worker: typed calls, streams both ways, a call-back, a clean close",
  async () => {
    const worker = await spawnEcho();
    assert.equal(worker.thread, true);
    assert.equal(worker.pid, Deno.pid);
    assert.equal(worker.name, "echo_worker.ts");
    const value = { when: new Date(0), tags: new Set(["a"]), big: 2n ** 70n, none: undefined };
    assert.deepEqual(await worker.remote.echo(value), value);
    assert.deepEqual(await Array.fromAsync(worker.remote.count(5)), [1, 2, 3, 4, 5]);
    assert.equal(await worker.remote.sum(ReadableStream.from([1, 2, 3, 4])), 10);
    assert.equal(await worker.remote.callParent(21), 42);
    const bytes = new Uint8Array(8 << 20).fill(7);
    const echoed = await worker.remote.echo(bytes) as Uint8Array;
    assert.equal(echoed.length, bytes.length);
    assert.equal(echoed[echoed.length - 1], 7);
    const error = await rejection(worker.remote.fail("no"));
    assert.ok(error instanceof RemoteError);
    assert.equal(error.name, "TypeError");
    assert.deepEqual({ ...await worker.close() }, { success: true, code: 0, signal: null });
    assert.ok(await rejection(worker.remote.echo(1)) instanceof WorkerExitedError);
  },
);

threadLeakFreeTest(
  "thread worker: a cancelled call and a cancelled stream leave the worker serving",
  async () => {
    await using worker = await spawnEcho();
    const controller = new AbortController();
    const pending = worker.remote.sleep(60_000, { signal: controller.signal });
    controller.abort(new Error("changed my mind"));
    assert.equal((await rejection(pending) as Error).message, "changed my mind");
    const stream = worker.remote.count(1_000_000);
    let seen = 0;
    for await (const _ of stream) if (++seen === 3) break;
    assert.equal(seen, 3);
    assert.equal(await worker.remote.echo("still here"), "still here");
  },
);

threadLeakFreeTest(
  "thread worker: an uncaught error fails pending calls with WorkerExitedError",
  async () => {
    const worker = await spawnEcho();
    const sleeping = worker.remote.sleep(60_000);
    const error = await rejection(worker.remote.crash("boom"));
    assert.ok(error instanceof WorkerExitedError);
    assert.equal(error.thread, true);
    assert.equal(error.code, 1);
    assert.match(error.message, /\(thread\) exited with code 1 \(it threw: .*boom\)/);
    assert.ok(await rejection(sleeping) instanceof WorkerExitedError);
    assert.deepEqual({ ...await worker.exited }, { success: false, code: 1, signal: null });
    await worker.close();
  },
);

threadLeakFreeTest(
  "thread worker: self.close() and Deno.exit() fail pending calls, code 0",
  async () => {
    for (const end of ["closeSelf", "exit"] as const) {
      const worker = await spawnEcho();
      const sleeping = worker.remote.sleep(60_000);
      const error = await rejection(
        end === "exit" ? worker.remote.exit(3) : worker.remote.closeSelf(),
      );
      assert.ok(error instanceof WorkerExitedError, `${end}: ${error}`);
      assert.match(error.message, /closed itself/);
      assert.ok(await rejection(sleeping) instanceof WorkerExitedError);
      assert.equal((await worker.close()).code, 0);
    }
  },
);

threadLeakFreeTest("thread worker: kill() terminates it; the status reads as SIGKILL", async () => {
  const worker = await spawnEcho();
  const pending = worker.remote.sleep(60_000);
  const stream = worker.remote.count(1_000_000)[Symbol.asyncIterator]();
  await stream.next();
  const status = await worker.kill();
  assert.deepEqual({ ...status }, { success: false, code: 137, signal: "SIGKILL" });
  const error = await rejection(pending);
  assert.ok(error instanceof WorkerExitedError);
  assert.match(error.message, /\(thread\) was terminated \(kill\(\) was called\)/);
  assert.ok(await rejection(stream.next()) instanceof WorkerExitedError);
  // A busy thread (a synchronous loop) is terminated too.
  const busy = await spawnEcho();
  const hanging = busy.remote.hang(60_000);
  await new Promise((resolve) => setTimeout(resolve, 50));
  assert.equal((await busy.kill()).signal, "SIGKILL");
  assert.ok(await rejection(hanging) instanceof WorkerExitedError);
});

threadLeakFreeTest(
  "thread worker: close() cut short by drainTimeout terminates it; the status reads as SIGKILL",
  async () => {
    const worker = await spawnWorker<EchoApi>(ECHO, {
      thread: true,
      handlers: parent,
      drainTimeout: 200,
    });
    const sleeping = worker.remote.sleep(60_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const status = await worker.close();
    assert.deepEqual({ ...status }, { success: false, code: 137, signal: "SIGKILL" });
    const error = await rejection(sleeping);
    assert.ok(error instanceof WorkerExitedError, String(error));
    assert.match(error.message, /\(thread\) was terminated \(.*drainTimeout \(200 ms\)\)/);
  },
);

for (const during of ["close()", "no close()"] as const) {
  threadLeakFreeTest(
    `thread worker: a hung thread the heartbeat ends reads as killed (${during})`,
    async () => {
      // This side ends the channel of a thread stuck in synchronous code and terminates it:
      // not a thread that exited by itself.
      const worker = await spawnWorker<EchoApi>(ECHO, {
        thread: true,
        drainTimeout: 10_000,
        heartbeat: { interval: 50, timeout: 300 },
      });
      const hanging = worker.remote.hang(1_500);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const closing = during === "close()" ? worker.close() : undefined;
      const error = await rejection(hanging);
      assert.ok(error instanceof WorkerExitedError, String(error));
      assert.match(error.message, /heartbeat timeout 300 ms/);
      const status = await (closing ?? worker.close());
      assert.deepEqual({ ...status }, { success: false, code: 137, signal: "SIGKILL" });
    },
  );
}

threadLeakFreeTest(
  "thread worker: a coded GOODBYE from the worker during close() reads as its own, not SIGKILL",
  async () => {
    // The worker's own drainTimeout (100 ms) ends its side with GOODBYE (aborted) long before
    // the parent's (10 s): the thread went of its own accord, as it would outside close().
    const worker = await spawnWorker<GoodbyeApi>(GOODBYE, {
      thread: true,
      handlers: { wait: waitForCancel },
      drainTimeout: 10_000,
    });
    const asking = worker.remote.askParent(null);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const status = await worker.close();
    assert.deepEqual({ ...status }, { success: true, code: 0, signal: null });
    const error = await rejection(asking);
    assert.ok(error instanceof WorkerExitedError, String(error));
    assert.equal(error.signal, null);
    assert.match(
      error.message,
      /\(thread\) exited with code 0 \(The peer closed the connection \(aborted\): drainTimeout \(100 ms\) passed with calls in flight\)/,
    );
  },
);

threadLeakFreeTest("thread worker: a module that throws at load fails the spawn", async () => {
  const module = `data:application/javascript,${encodeURIComponent('throw new Error("at load")')}`;
  const error = await rejection(spawnWorker(module, { thread: true }));
  assert.ok(error instanceof WorkerExitedError, String(error));
  assert.equal(error.code, 1);
  assert.equal(error.beforeServing, true);
  assert.match(error.message, /before it served \(it threw: .*at load\)/);
  const missing = await rejection(
    spawnWorker(new URL("./no_such_worker.ts", import.meta.url), { thread: true }),
  );
  assert.ok(missing instanceof WorkerExitedError);
  assert.match(missing.message, /no_such_worker\.ts/);
});

threadLeakFreeTest(
  "thread worker: a module that never serves fails the handshake, saying so",
  async () => {
    const module = `data:application/javascript,${encodeURIComponent("globalThis.loaded = true;")}`;
    const error = await rejection(spawnWorker(module, { thread: true, handshakeTimeout: 200 }));
    assert.ok(error instanceof HandshakeError, String(error));
    assert.equal(error.code, "handshake_timeout");
    assert.match(
      error.message,
      /thread worker inline module .*did the module call serveWorker\(\), without ending itself \(Deno\.exit\) before\?/,
    );
  },
);

Deno.test("thread worker: options only a process takes are a TypeError", async () => {
  const cases = [
    { denoArgs: ["--v8-flags=--max-old-space-size=64"] },
    { args: ["x"] },
    { transport: "unix" as const },
    { stderr: "discard" as const },
    { exitTimeout: 10, killTimeout: 10 },
    { env: { A: "1" } },
  ];
  for (const options of cases) {
    const error = await rejection(spawnWorker(ECHO, { thread: true, ...options }));
    assert.ok(error instanceof TypeError, JSON.stringify(options));
    for (const key of Object.keys(options)) assert.match(error.message, new RegExp(key));
    assert.match(error.message, /thread: true/);
  }
  const command = await rejection(spawnWorker({ command: "python3" }, { thread: true }));
  assert.ok(command instanceof TypeError);
  const relative = await rejection(spawnWorker("./w.ts", { thread: true }));
  assert.ok(relative instanceof TypeError);
});

threadLeakFreeTest(
  "serveWorker refuses in a Web Worker that spawnWorker did not start",
  async () => {
    const serve = new URL("./serve_worker.ts", import.meta.url);
    const code = `import { serveWorker } from ${JSON.stringify(serve.href)};
    serveWorker({}).then(() => postMessage("served"), (e) => postMessage(e.message));`;
    const worker = new Worker(`data:application/javascript,${encodeURIComponent(code)}`, {
      type: "module",
      name: "someone else's",
    });
    const message = await new Promise<string>((resolve) =>
      worker.onmessage = (e) => resolve(e.data)
    );
    worker.terminate();
    assert.match(message, /spawnWorker did not start/);
  },
);

threadLeakFreeTest(
  "thread worker: a module that awaits before it serves still gets the HELLO",
  async () => {
    // Deno drops a message that reaches a worker with no listener: the parent's HELLO, posted
    // at once, was lost while the module awaited ("The first frame was CALL, not HELLO").
    const url = new URL("./_testdata/slow_start_worker.ts", import.meta.url);
    await using worker = await spawnWorker<SlowStartApi>(url, {
      thread: true,
      // Generous: the thread loads its modules from source, slowly on a loaded machine.
      handshakeTimeout: 20_000,
    });
    assert.equal(await worker.remote.ping(), "pong");
  },
);
