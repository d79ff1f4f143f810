// Process workers under attack: hostile or broken worker modules and spawn options, against
// real subprocesses.
import assert from "node:assert/strict";
import { HandshakeError } from "../channel/errors.ts";
import { rejection } from "./_test_rejection.ts";
import { isGone, leakFreeTest, testEnv, waitUntilGone } from "./_test_processes.ts";
import type { AttackApi } from "./_testdata/_hostile_worker.ts";
import {
  spawnWorker as spawnWorkerUnmarked,
  type SpawnWorkerOptions,
  type WorkerHandle,
} from "./spawn_worker.ts";
import { WORKER_SOCKET_ENV } from "./worker_env.ts";

const ATTACK = new URL("./_testdata/_hostile_worker.ts", import.meta.url);
const ATTACK_PARENT = new URL("./_testdata/_hostile_parent.ts", import.meta.url);

/** spawnWorker, with the running test's mark in the worker's environment. */
function spawnWorker<Api extends object>(
  worker: URL,
  options: SpawnWorkerOptions = {},
): Promise<WorkerHandle<Api>> {
  return spawnWorkerUnmarked<Api>(worker, { ...options, env: { ...options.env, ...testEnv() } });
}

const haveSetpriv = await new Deno.Command("setpriv", { args: ["--help"], stdout: "null" })
  .output().then((output) => output.success, () => false);

for (const transport of ["stdio", "unix"] as const) {
  leakFreeTest(
    `process hostile: a module that loads but never serves fails with a HandshakeError (${transport})`,
    async () => {
      const error = await rejection(
        spawnWorker(ATTACK, {
          transport,
          args: ["idle"],
          handshakeTimeout: 500,
          stderr: "discard",
        }),
      );
      // Not "killed by SIGKILL before it served": nobody but spawnWorker killed it, because
      // it never connected or answered; the error says so, and asks the likely question.
      assert.ok(error instanceof HandshakeError, String(error));
      assert.equal(error.code, "handshake_timeout");
      assert.match(error.message, /500 ms/);
      assert.match(error.message, /_hostile_worker\.ts \(pid \d+\)/);
      assert.match(error.message, /did the module call serveWorker\(\)\?/);
    },
  );
}

leakFreeTest(
  "process hostile: a stdio worker ignores the socket variable its parent inherited",
  async () => {
    // As in a worker that its own parent reached over a Unix socket, spawning a worker of its
    // own over stdio (or a WorkerCommand, which reads its whole environment): the inherited
    // variable names a socket that is not this worker's (and is gone by now).
    const previous = Deno.env.get(WORKER_SOCKET_ENV);
    Deno.env.set(WORKER_SOCKET_ENV, "/tmp/cdw-not-yours/w.sock");
    try {
      const worker = await spawnWorker<AttackApi>(ATTACK, {
        transport: "stdio",
        permissions: { env: true },
        stderr: "discard",
      });
      assert.equal(await worker.remote.ping(), "pong");
      assert.equal((await worker.close()).code, 0);
    } finally {
      if (previous === undefined) Deno.env.delete(WORKER_SOCKET_ENV);
      else Deno.env.set(WORKER_SOCKET_ENV, previous);
    }
  },
);

leakFreeTest(
  "process hostile: kill() ends the worker, not its children, unless they die with it",
  async () => {
    if (!haveSetpriv) return;
    const worker = await spawnWorker<AttackApi>(ATTACK, {
      permissions: { run: ["sleep", "setpriv"] },
      stderr: "discard",
    });
    const plain = await worker.remote.grandchild(60);
    const guarded = await worker.remote.guardedGrandchild(60);
    try {
      // setpriv sets the parent-death signal once it runs, then becomes `sleep`: a worker killed
      // before then would leave its child to init (a loaded machine widens that window).
      await until(async () =>
        (await Deno.readTextFile(`/proc/${guarded}/comm`)).trim() === "sleep"
      );
      assert.equal((await worker.kill()).signal, "SIGKILL");
      // docs/workers.md, "Children of a worker": only the kernel's parent-death signal ends it.
      await waitUntilGone([guarded]);
      assert.equal(await isGone(plain), false);
    } finally {
      for (const pid of [plain, guarded]) if (!await isGone(pid)) Deno.kill(pid, "SIGKILL");
    }
  },
);

for (const how of ["cwd", "path"] as const) {
  leakFreeTest(
    `process hostile: a spawn with ${
      how === "cwd" ? "a missing cwd" : "its own PATH"
    } does not cost later workers the parent-death signal`,
    async () => {
      if (!haveSetpriv) return;
      const parent = new Deno.Command(Deno.execPath(), {
        args: ["run", "--no-prompt", "--allow-run", ATTACK_PARENT.pathname, how],
        env: testEnv(),
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      const reader = parent.stdout.getReader();
      const decoder = new TextDecoder();
      let text = "";
      while (!text.includes("\n")) {
        const { done, value } = await reader.read();
        if (done) break;
        text += decoder.decode(value, { stream: true });
      }
      const stderr = new Response(parent.stderr).text();
      parent.kill("SIGKILL");
      await parent.status;
      await reader.cancel();
      assert.ok(text.includes("\n"), `the parent printed no pid: ${await stderr}`);
      await stderr;
      const pid: number = JSON.parse(text);
      try {
        // The worker spins for 120 s: only the kernel's parent-death signal ends it sooner.
        await waitUntilGone([pid], 5_000);
      } finally {
        if (!await isGone(pid)) Deno.kill(pid, "SIGKILL");
      }
    },
  );
}

/** Waits until `holds()` does (every 5 ms, up to 5 s), or throws. */
async function until(holds: () => Promise<boolean>): Promise<void> {
  for (const end = Date.now() + 5_000; !await holds();) {
    if (Date.now() > end) throw new Error("waited 5 s in vain");
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
