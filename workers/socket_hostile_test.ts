// A hostile local process against a worker's Unix socket: it finds the socket's path (here in
// the worker's environment, as any process of this user can) and connects before the worker.

import assert from "node:assert/strict";
import { spawnWorker } from "./spawn_worker.ts";
import { openChannel } from "../channel/channel.ts";
import { connectUnix } from "../transports/unix.ts";
import { structuredCodec } from "../codecs/structured.ts";
import { HandshakeError } from "../channel/errors.ts";
import type { SlowStartApi } from "./_testdata/slow_start_worker.ts";
import type { TokenEnvApi } from "./_testdata/token_env_worker.ts";

const slowStart = new URL("./_testdata/slow_start_worker.ts", import.meta.url);

/** The socket path in the environment of a child of this process, once one has it. */
async function childSocketPath(): Promise<string> {
  for (let tries = 0; tries < 2_000; tries++) {
    for (const task of Deno.readDirSync("/proc/self/task")) {
      const children = Deno.readTextFileSync(`/proc/self/task/${task.name}/children`);
      for (const pid of children.split(" ").filter(Boolean)) {
        const env = Deno.readTextFileSync(`/proc/${pid}/environ`).split("\0");
        const entry = env.find((line) => line.startsWith("CONDUIT_WORKER_SOCKET=/"));
        if (entry !== undefined) return entry.slice(entry.indexOf("=") + 1);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error("no child with a worker socket");
}

Deno.test({
  name: "workers/socket: a process that connects before the worker does not become it",
  ignore: Deno.build.os !== "linux",
  async fn() {
    let impostorCalls = 0;
    const spawning = spawnWorker<SlowStartApi>(slowStart, {
      transport: "unix",
      stderr: "discard",
      stdout: "discard",
    }).then((worker) => ({ worker }), (error: unknown) => ({ error }));
    const path = await childSocketPath();
    const impostor = openChannel(await connectUnix(path), {
      codec: structuredCodec(),
      handlers: {
        ping: () => {
          impostorCalls++;
          return "impostor";
        },
      },
    }).then((channel) => channel, () => undefined);
    const spawned = await spawning;
    const channel = await impostor;
    let answer: string | undefined;
    if ("worker" in spawned) {
      answer = await spawned.worker.remote.ping().catch(() => undefined);
      await spawned.worker.close();
    }
    await channel?.close().catch(() => {});
    assert.equal(impostorCalls, 0, "the impostor was called as the worker");
    assert.notEqual(answer, "impostor");
    assert.equal(channel, undefined, "the impostor's handshake succeeded");
  },
});

Deno.test({
  name: "workers/socket: the secret is in no argv and gone from the worker's environment",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const url = new URL("./_testdata/token_env_worker.ts", import.meta.url);
    await using worker = await spawnWorker<TokenEnvApi>(url, { transport: "unix" });
    const cmdline = Deno.readTextFileSync(`/proc/${worker.pid}/cmdline`);
    assert.doesNotMatch(cmdline, /[0-9a-f]{64}/);
    assert.equal(await worker.remote.token(), null);
  },
});

Deno.test({
  name: "workers/socket: a worker that never connects times out and leaves no socket behind",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const url = new URL("./_testdata/never_connects_worker.ts", import.meta.url);
    const spawning = spawnWorker(url, {
      transport: "unix",
      handshakeTimeout: 300,
      stderr: "discard",
    }).then(() => undefined, (error: unknown) => error);
    const path = await childSocketPath();
    assert.equal(Deno.statSync(path).isSocket, true);
    const dir = path.slice(0, path.lastIndexOf("/"));
    assert.equal(Deno.statSync(dir).mode! & 0o777, 0o700);
    const error = await spawning;
    assert.ok(error instanceof HandshakeError, String(error));
    assert.equal(error.code, "handshake_timeout");
    assert.throws(() => Deno.statSync(dir), Deno.errors.NotFound);
  },
});

Deno.test("workers/permissions: an empty entry or a URL that is no file is refused before the spawn", async () => {
  const echo = new URL("./_testdata/echo_worker.ts", import.meta.url);
  for (
    const permissions of [
      { read: [""] },
      { write: ["/tmp/a", ""] },
      { read: [new URL("https://example.com/")] },
    ]
  ) {
    const error = await spawnWorker(echo, { permissions, stderr: "discard" }).then(
      (worker) => worker.close().then(() => "spawned"),
      (error: unknown) => error,
    );
    assert.ok(error instanceof TypeError, `${JSON.stringify(permissions)}: ${error}`);
  }
});
