import assert from "node:assert/strict";
import { rejection } from "./_test_rejection.ts";
import {
  ConnectionClosedError,
  DeadlineExceededError,
  HandshakeError,
  RemoteError,
} from "../channel/errors.ts";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { leakFreeTest, testEnv, waitUntilGone } from "./_test_processes.ts";
import type { EchoApi, ParentApi } from "./_testdata/echo_worker.ts";
import { type GoodbyeApi, waitForCancel } from "./_testdata/goodbye_worker.ts";
import {
  DEFAULT_WORKER_V8_FLAGS,
  spawnWorker as spawnWorkerUnmarked,
  type SpawnWorkerOptions,
  standaloneRefusal,
  type WorkerCommand,
  type WorkerHandle,
  type WorkerTransportKind,
} from "./spawn_worker.ts";
import { WorkerExitedError } from "./errors.ts";

const ECHO = new URL("./_testdata/echo_worker.ts", import.meta.url);
const GOODBYE = new URL("./_testdata/goodbye_worker.ts", import.meta.url);
const STUBBORN = new URL("./_testdata/stubborn_worker.ts", import.meta.url);
const ORPHAN_PARENT = new URL("./_testdata/orphan_parent.ts", import.meta.url);
const PREFIX_PARENT = new URL("./_testdata/prefix_parent.ts", import.meta.url);
const PYTHON_PEER = new URL("../interop/python/demo_server.py", import.meta.url);

/** spawnWorker, with the running test's mark in the worker's environment. */
function spawnWorker<Api extends object>(
  worker: string | URL | WorkerCommand,
  options: SpawnWorkerOptions = {},
): Promise<WorkerHandle<Api>> {
  return spawnWorkerUnmarked<Api>(worker, { ...options, env: { ...options.env, ...testEnv() } });
}

const parent: ParentApi = { double: (x) => 2 * x };
/** The goodbye worker's parent: `wait` answers only once its call is cancelled. */
const waitingParent = { wait: waitForCancel };

/** Spawns the echo worker quietly (stderr kept for the tail only). */
function spawnEcho(
  transport: WorkerTransportKind = "stdio",
  lines?: string[],
): Promise<WorkerHandle<EchoApi>> {
  return spawnWorker<EchoApi>(ECHO, {
    transport,
    handlers: parent,
    stderr: lines ? (line) => lines.push(line) : "discard",
  });
}

for (const transport of ["stdio", "unix"] as const) {
  leakFreeTest(
    `spawnWorker/${transport}: typed calls, a stream, a call-back, a clean close`,
    async () => {
      const lines: string[] = [];
      const worker = await spawnEcho(transport, lines);
      assert.deepEqual(await worker.remote.echo({ a: [1, "two", null] }), { a: [1, "two", null] });
      assert.equal(await worker.remote.pid(), worker.pid);
      assert.deepEqual(await Array.fromAsync(worker.remote.count(5)), [1, 2, 3, 4, 5]);
      assert.equal(await worker.remote.callParent(21), 42);
      const error = await rejection(worker.remote.fail("bad input"));
      assert.ok(error instanceof RemoteError);
      assert.equal(error.name, "TypeError");
      assert.equal(error.message, "bad input");
      // Every console method that prints to stdout went to stderr: the frames survived.
      assert.equal(await worker.remote.chatty(), "still framed");
      const status = await worker.close();
      assert.deepEqual({ ...status }, { success: true, code: 0, signal: null });
      for (const expected of ["log line", "info line", "debug line", "{ dir: 1 }", "default: 1"]) {
        assert.ok(lines.includes(expected), `stderr lacks ${expected}: ${JSON.stringify(lines)}`);
      }
      assert.ok(lines.some((line) => /^t: [\d.]+ms$/.test(line)));
      assert.deepEqual(worker.stderrTail, lines.slice(-20));
      await waitUntilGone([worker.pid]);
    },
  );

  leakFreeTest(
    `spawnWorker/${transport}: a worker that exits mid-call fails every pending call`,
    async () => {
      const worker = await spawnEcho(transport);
      const slow = worker.remote.sleep(60_000);
      const stream = worker.remote.count(1e9)[Symbol.asyncIterator]();
      assert.deepEqual(await stream.next(), { done: false, value: 1 });
      const exiting = worker.remote.exit(3);
      // The stream delivers what it buffered, then fails.
      const streamEnd = (async () => {
        while (!(await stream.next()).done) {
          // Draining.
        }
      })();
      for (const pending of [slow, exiting, streamEnd]) {
        const error = await rejection(pending);
        assert.ok(error instanceof WorkerExitedError, String(error));
        assert.ok(error instanceof ConnectionClosedError);
        assert.equal(error.code, 3);
        assert.equal(error.signal, null);
        assert.ok(error.stderrTail.includes("exiting with 3"), error.message);
        assert.match(error.message, /exited with code 3; last stderr lines:\n {2}exiting with 3/);
      }
      // Calls after the exit fail the same way, at once.
      assert.ok(await rejection(worker.remote.echo(1)) instanceof WorkerExitedError);
      assert.equal((await worker.exited).code, 3);
      assert.equal((await worker.close()).code, 3);
    },
  );

  leakFreeTest(
    `spawnWorker/${transport}: an uncaught exception's trace is in the error`,
    async () => {
      const worker = await spawnEcho(transport);
      const error = await rejection(worker.remote.crash("kaboom"));
      assert.ok(error instanceof WorkerExitedError);
      assert.equal(error.code, 1);
      assert.ok(
        error.stderrTail.some((line) => line.includes("Uncaught Error: kaboom")),
        error.message,
      );
      await worker.exited;
    },
  );

  leakFreeTest(`spawnWorker/${transport}: SIGKILL from outside mid-call`, async () => {
    const worker = await spawnEcho(transport);
    const calls = [worker.remote.sleep(60_000), worker.remote.sleep(60_000)];
    assert.equal(await worker.remote.echo("alive"), "alive");
    Deno.kill(worker.pid, "SIGKILL");
    for (const call of calls) {
      const error = await rejection(call);
      assert.ok(error instanceof WorkerExitedError);
      assert.equal(error.signal, "SIGKILL");
      assert.equal(error.code, 137);
      assert.match(error.message, /was killed by SIGKILL/);
    }
    assert.equal((await worker.exited).signal, "SIGKILL");
  });
}

leakFreeTest(
  "spawnWorker: a Deno worker's V8 flags are the default ones, or only yours",
  async () => {
    const v8Flags = async (denoArgs?: string[]) => {
      const worker = await spawnWorker<EchoApi>(ECHO, { handlers: parent, denoArgs });
      try {
        const cmdline = await Deno.readTextFile(`/proc/${worker.pid}/cmdline`);
        return cmdline.split("\0").filter((arg) => arg.startsWith("--v8-flags"));
      } finally {
        await worker.close();
      }
    };
    assert.deepEqual(await v8Flags(), [`--v8-flags=${DEFAULT_WORKER_V8_FLAGS.join(",")}`]);
    assert.deepEqual(await v8Flags(["--v8-flags=--max-old-space-size=64"]), [
      "--v8-flags=--max-old-space-size=64",
    ]);
  },
);

leakFreeTest("spawnWorker: kill() fails pending calls and says so", async () => {
  const worker = await spawnEcho();
  const pending = worker.remote.sleep(60_000);
  const status = await worker.kill();
  assert.equal(status.signal, "SIGKILL");
  const error = await rejection(pending);
  assert.ok(error instanceof WorkerExitedError);
  assert.match(error.message, /killed by SIGKILL \(kill\(\) was called\)/);
  await waitUntilGone([worker.pid]);
});

leakFreeTest(
  "spawnWorker: a worker that exits by itself during close() is given no reason it did not have",
  async () => {
    const worker = await spawnWorker<EchoApi>(ECHO, {
      stderr: "discard",
      drainTimeout: 10_000,
      env: testEnv(),
    });
    // The worker exits with 3 of its own accord while close() waits for the call.
    const exiting = worker.remote.exit(3);
    const status = await worker.close();
    assert.equal(status.code, 3);
    const error = await rejection(exiting);
    assert.ok(error instanceof WorkerExitedError, String(error));
    // As outside close(): no reason this side made up.
    assert.match(error.message, /exited with code 3(;|$)/);
    await waitUntilGone([worker.pid]);
  },
);

for (const transport of ["stdio", "unix"] as const) {
  leakFreeTest(
    `spawnWorker/${transport}: close() cut short by drainTimeout says so in the calls' error`,
    async () => {
      // The worker, its channel cut, exits with code 1 by itself: the error says why.
      const worker = await spawnWorker<EchoApi>(ECHO, {
        transport,
        stderr: "discard",
        drainTimeout: 200,
      });
      const sleeping = worker.remote.sleep(60_000);
      await new Promise((resolve) => setTimeout(resolve, 50));
      const status = await worker.close();
      assert.deepEqual({ ...status }, { success: false, code: 1, signal: null });
      const error = await rejection(sleeping);
      assert.ok(error instanceof WorkerExitedError, String(error));
      assert.match(error.message, /exited with code 1 \(.*drainTimeout \(200 ms\)\)/);
      await waitUntilGone([worker.pid]);
    },
  );
}

leakFreeTest(
  "spawnWorker: a busy worker cut short by drainTimeout, then SIGTERM, says why",
  async () => {
    const worker = await spawnWorker<EchoApi>(ECHO, {
      stderr: "discard",
      drainTimeout: 200,
      exitTimeout: 200,
    });
    // Busy in synchronous code: it reads nothing until SIGTERM ends it.
    const hanging = worker.remote.hang(60_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const status = await worker.close();
    assert.equal(status.signal, "SIGTERM");
    const error = await rejection(hanging);
    assert.ok(error instanceof WorkerExitedError, String(error));
    assert.match(error.message, /killed by SIGTERM \(.*drainTimeout \(200 ms\)\)/);
    await waitUntilGone([worker.pid]);
  },
);

leakFreeTest(
  "spawnWorker: a worker that ends its channel itself during close() is not said to be cut off",
  async () => {
    // The worker's own drainTimeout (100 ms) ends its side with a coded GOODBYE long before
    // the parent's (10 s): it exits with 1 of its own accord, as outside close().
    const worker = await spawnWorker<GoodbyeApi>(GOODBYE, {
      stderr: "discard",
      drainTimeout: 10_000,
      handlers: waitingParent,
    });
    const asking = worker.remote.askParent(null);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const status = await worker.close();
    assert.deepEqual({ ...status }, { success: false, code: 1, signal: null });
    const error = await rejection(asking);
    assert.ok(error instanceof WorkerExitedError, String(error));
    assert.match(error.message, /exited with code 1(;|$)/);
    assert.doesNotMatch(error.message, /drainTimeout/);
    await waitUntilGone([worker.pid]);
  },
);

leakFreeTest("spawnWorker: a hung worker is caught by the heartbeat and killed", async () => {
  const worker = await spawnWorker<EchoApi>(ECHO, {
    stderr: "discard",
    heartbeat: { interval: 50, timeout: 400 },
  });
  assert.equal(await worker.remote.echo(1), 1);
  const error = await rejection(worker.remote.hang(60_000));
  assert.ok(error instanceof WorkerExitedError, String(error));
  assert.equal(error.signal, "SIGKILL");
  assert.match(error.message, /heartbeat timeout 400 ms/);
  assert.ok(error.cause instanceof ConnectionClosedError);
  await worker.exited;
  await waitUntilGone([worker.pid]);
});

leakFreeTest("spawnWorker: a hung call hits its deadline; the worker is then killed", async () => {
  const worker = await spawnEcho();
  const error = await rejection(worker.remote.hang(60_000, { timeout: 200 }));
  assert.ok(error instanceof DeadlineExceededError);
  assert.equal((await worker.kill()).signal, "SIGKILL");
});

leakFreeTest("spawnWorker: close() lets in-flight calls finish", async () => {
  const worker = await spawnEcho();
  const slow = worker.remote.sleep(300);
  const stream = Array.fromAsync(worker.remote.count(1000));
  await worker.remote.echo("sent");
  const closing = worker.close();
  assert.equal(await slow, "slept");
  assert.equal((await stream).length, 1000);
  assert.equal((await closing).code, 0);
  // Calls after close() fail; the worker is gone.
  assert.ok(await rejection(worker.remote.echo(1)) instanceof ConnectionClosedError);
});

leakFreeTest("spawnWorker: close() escalates to SIGTERM, then SIGKILL", async () => {
  const options = { stderr: "discard", exitTimeout: 100, killTimeout: 200 } as const;
  const [polite, stubborn] = await Promise.all([
    spawnWorker<{ ping(): string }>(STUBBORN, options),
    spawnWorker<{ ping(): string }>(STUBBORN, { ...options, args: ["ignore-term"] }),
  ]);
  assert.equal(await polite.remote.ping(), "pong");
  assert.equal(await stubborn.remote.ping(), "pong");
  const [politeStatus, stubbornStatus] = await Promise.all([polite.close(), stubborn.close()]);
  assert.equal(politeStatus.signal, "SIGTERM");
  assert.equal(stubbornStatus.signal, "SIGKILL");
  assert.ok(stubborn.stderrTail.includes("ignoring SIGTERM"));
});

leakFreeTest("spawnWorker: await using closes the worker", async () => {
  let pid: number;
  {
    await using worker = await spawnEcho("unix");
    pid = worker.pid;
    assert.equal(await worker.remote.echo("x"), "x");
  }
  await waitUntilGone([pid]);
});

leakFreeTest("spawnWorker: the codec is an option on both sides", async () => {
  const worker = await spawnWorker<EchoApi>(ECHO, {
    codec: msgpackCodec(),
    args: ["--msgpack"],
    stderr: "discard",
  });
  // msgpack carries what JSON cannot.
  const value = new Map<string, bigint>([["big", 2n ** 70n]]);
  assert.deepEqual(await worker.remote.echo(value), value);
  await worker.close();
});

leakFreeTest("spawnWorker: a codec mismatch fails the spawn and stops the worker", async () => {
  const lines: string[] = [];
  const error = await rejection(
    spawnWorker<EchoApi>(ECHO, { codec: msgpackCodec(), stderr: (line) => lines.push(line) }),
  );
  assert.ok(error instanceof HandshakeError, String(error));
  assert.equal(error.code, "codec_mismatch");
});

leakFreeTest(
  "spawnWorker: the worker's stderr is forwarded line by line with a prefix",
  async () => {
    const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
      args: ["run", "--no-prompt", "--allow-run", "--allow-read", PREFIX_PARENT.pathname],
      env: testEnv(),
    }).output();
    const lines = new TextDecoder().decode(stderr).split("\n");
    assert.equal(code, 0, lines.join("\n"));
    const pid = Number(new TextDecoder().decode(stdout));
    assert.ok(lines.includes(`[echo_worker.ts ${pid}] log line`), lines.join("\n"));
    assert.ok(lines.includes(`[echo_worker.ts ${pid}] { dir: 1 }`), lines.join("\n"));
  },
);

leakFreeTest("spawnWorker: a missing module fails with the worker's own explanation", async () => {
  const error = await rejection(
    spawnWorker(new URL("./_testdata/missing_worker.ts", import.meta.url), { stderr: "discard" }),
  );
  assert.ok(error instanceof WorkerExitedError);
  assert.equal(error.code, 1);
  assert.ok(error.stderrTail.some((line) => line.includes("missing_worker.ts")), error.message);
});

leakFreeTest(
  "spawnWorker: a typo in an import keeps Deno's explaining line past the tail",
  async () => {
    const module = new URL("./_testdata/bad_import_worker.ts", import.meta.url);
    const error = await rejection(spawnWorker(module, { stderr: "discard", stderrTailLines: 5 }));
    assert.ok(error instanceof WorkerExitedError, String(error));
    assert.equal(error.code, 1);
    // The tail is the end of the list of the package's exports; the line before it says why.
    assert.equal(error.stderrTail.length, 5);
    assert.ok(!error.stderrTail.some((line) => line.includes("Unknown export")));
    const explained = /Unknown export '\.\/workers\/serv' for '@conduit\/ipc'/;
    assert.match(error.stderrLines[0], explained);
    assert.match(
      error.message,
      /exited with code 1 before it served; stderr \(its first, error and last lines\):\n {2}error: Uncaught \(in promise\) TypeError: Unknown export/,
    );
    assert.match(error.message, /\n {2}… \(\d+ lines left out\)\n/);
  },
);

leakFreeTest("spawnWorker: permissions are only what is granted", async () => {
  const program = new URL("./_testdata/permission_worker.ts", import.meta.url);
  const denied = await spawnWorker<{ read(path: string): Promise<string> }>(program, {
    stderr: "discard",
  });
  const error = await rejection(denied.remote.read(new URL(import.meta.url).pathname));
  assert.ok(error instanceof RemoteError);
  assert.equal(error.name, "NotCapable");
  await denied.close();
  const granted = await spawnWorker<{ read(path: string): Promise<string> }>(program, {
    stderr: "discard",
    permissions: { read: [new URL(".", import.meta.url)] },
  });
  assert.match(await granted.remote.read(new URL(import.meta.url).pathname), /permissions are/);
  await granted.close();
});

leakFreeTest("spawnWorker: bad options are refused before anything starts", async () => {
  await assert.rejects(spawnWorker(ECHO, { exitTimeout: -1 }), RangeError);
  await assert.rejects(spawnWorker(ECHO, { stderrTailLines: 1.5 }), RangeError);
  await assert.rejects(
    spawnWorker(ECHO, { transport: "tcp" as WorkerTransportKind }),
    /transport must be "stdio" or "unix"/,
  );
  await assert.rejects(
    spawnWorker(ECHO, { permissions: { read: ["/a,b"] } }),
    /cannot contain ","/,
  );
  await assert.rejects(spawnWorker({ command: "/no/such/program" }), Deno.errors.NotFound);
});

leakFreeTest("spawnWorker: any command that speaks the protocol (the Python peer)", async () => {
  const started = Promise.withResolvers<unknown>();
  const lines: string[] = [];
  const worker = await spawnWorker<{ add(p: { a: number; b: number }): number }>({
    command: "python3",
    args: [PYTHON_PEER.pathname, "--stdio"],
  }, {
    stderr: (line) => lines.push(line),
    handlers: {
      "ts.echo": (value: unknown) => value,
      "py.started": (param: unknown) => started.resolve(param),
    },
  });
  assert.equal(worker.name, "python3");
  assert.equal(await worker.remote.add({ a: 2, b: 3 }), 5);
  // The peer calls us back first thing; it exits 0 only if that worked.
  assert.deepEqual(await started.promise, {
    echoed: { from: "python", n: 7, nested: { ok: true, text: "héllo ✓" } },
  });
  assert.equal((await worker.close()).code, 0, lines.join("\n"));
});

leakFreeTest("spawnWorker: workers die with a parent killed by SIGKILL", async () => {
  await orphanCheck("SIGKILL", []);
});

leakFreeTest("spawnWorker: a parent stopped by SIGTERM kills even a busy worker", async () => {
  // The kernel's parent-death signal does it (parent_death_test.ts covers SIGKILL too).
  const setpriv = await new Deno.Command("setpriv", { args: ["--help"], stdout: "null" })
    .output().then((output) => output.success, () => false);
  if (!setpriv) return console.warn("setpriv (util-linux) not found: test skipped");
  await orphanCheck("SIGTERM", ["hang"]);
});

async function orphanCheck(signal: Deno.Signal, args: string[]): Promise<void> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", "--allow-run", "--allow-read", ORPHAN_PARENT.pathname, ...args],
    env: testEnv(),
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) break;
    text += value;
  }
  const pids: number[] = JSON.parse(text);
  assert.equal(pids.length, 2);
  child.kill(signal);
  assert.equal((await child.status).signal, signal);
  await reader.cancel();
  await waitUntilGone(pids);
}

const module = { name: "_echo_worker.ts", specifier: "file:///app/_echo_worker.ts" };

Deno.test("workers/standalone: a deno compile binary refuses a worker module, saying the ways", () => {
  const err = standaloneRefusal(true, module);
  assert.ok(err instanceof Deno.errors.NotSupported);
  assert.match(err.message, /worker module _echo_worker\.ts as a process/);
  assert.match(err.message, /deno compile: Deno\.execPath\(\) is the program itself/);
  assert.match(err.message, /\{ thread: true \}/);
  assert.match(err.message, /--include/);
  assert.match(err.message, /command: "deno", args: \["run", <permission flags>, "file:\/\/\/app/);
  assert.match(err.message, /codec: structuredCodec\(\)/);
});

Deno.test("workers/standalone: deno itself runs worker modules", () => {
  assert.equal(Deno.build.standalone, false);
  assert.equal(standaloneRefusal(Deno.build.standalone, module), undefined);
});
