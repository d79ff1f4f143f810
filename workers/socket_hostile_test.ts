// A worker's Unix socket and its permissions: what a spawn leaves behind, and what it refuses.

import assert from "node:assert/strict";
import { spawnWorker } from "./spawn_worker.ts";
import { HandshakeError } from "../channel/errors.ts";

/**
 * The socket path in the environment of the child of this process whose environment holds
 * `mark`, once one has it (test files run in parallel in this process: other children abound).
 */
async function childSocketPath(mark: string): Promise<string> {
  for (let tries = 0; tries < 2_000; tries++) {
    for (const task of Deno.readDirSync("/proc/self/task")) {
      const children = procText(`/proc/self/task/${task.name}/children`);
      for (const pid of children.split(" ").filter(Boolean)) {
        const env = procText(`/proc/${pid}/environ`).split("\0");
        if (!env.includes(mark)) continue;
        const entry = env.find((line) => line.startsWith("CONDUIT_WORKER_SOCKET=/"));
        if (entry !== undefined) return entry.slice(entry.indexOf("=") + 1);
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
  throw new Error("no child with a worker socket");
}

/** A /proc file's text; empty once its thread or process is gone (another file's may end). */
function procText(path: string): string {
  try {
    return Deno.readTextFileSync(path);
  } catch {
    return "";
  }
}

Deno.test({
  name: "workers/socket: a worker that never connects times out and leaves no socket behind",
  ignore: Deno.build.os !== "linux",
  async fn() {
    const url = new URL("./_testdata/never_connects_worker.ts", import.meta.url);
    const mark = crypto.randomUUID();
    const spawning = spawnWorker(url, {
      transport: "unix",
      handshakeTimeout: 300,
      stderr: "discard",
      env: { SOCKET_TEST_MARK: mark },
    }).then(() => undefined, (error: unknown) => error);
    const path = await childSocketPath(`SOCKET_TEST_MARK=${mark}`);
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
      // From plain JavaScript: a string where a list goes was read as no grant over the socket.
      { read: "x" as unknown as string[] },
      { read: [1] as unknown as string[] },
    ]
  ) {
    const error = await spawnWorker(echo, { permissions, stderr: "discard" }).then(
      (worker) => worker.close().then(() => "spawned"),
      (error: unknown) => error,
    );
    assert.ok(error instanceof TypeError, `${JSON.stringify(permissions)}: ${error}`);
  }
});
