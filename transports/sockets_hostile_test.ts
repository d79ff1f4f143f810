// A hostile or broken peer against the Deno byte transports (Unix socket, memory):
// the cases the conformance suite (transports/_conformance.ts) does not reach.
import assert from "node:assert/strict";
import { TransportClosedError } from "../errors.ts";
import { tempDir } from "./_test_pairs.ts";
import { memoryPair } from "./memory.ts";
import { listenUnix } from "./unix.ts";

Deno.test({
  name: "unix hostile: a live listener too busy to take a connection is AddrInUse, its file kept",
  // Linux refuses a connect to a full backlog with EAGAIN (other systems differ).
  ignore: Deno.build.os !== "linux",
}, async () => {
  const dir = await tempDir();
  const path = `${dir}/busy.sock`;
  // A live listener that never accepts, its backlog filled: a probe connect would block.
  const busy = Deno.listen({ transport: "unix", path });
  const { ino } = await Deno.lstat(path);
  const queued: Deno.Conn[] = [];
  try {
    for (;;) queued.push(await Deno.connect({ transport: "unix", path }));
  } catch (error) {
    assert.ok(error instanceof Deno.errors.WouldBlock, String(error));
  }
  try {
    await assert.rejects(listenUnix(path), Deno.errors.AddrInUse);
    assert.equal((await Deno.lstat(path)).ino, ino);
  } finally {
    for (const conn of queued) conn.close();
    busy.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("unix hostile: close() resolves when the socket's directory was removed first", async () => {
  const dir = await tempDir();
  const listener = await listenUnix(`${dir}/s`);
  await Deno.remove(dir, { recursive: true });
  await listener.close();
});

Deno.test("memory hostile: a write after the peer closed says so", async () => {
  const [a, b] = memoryPair();
  await b.close();
  const error = await Promise.resolve(a.writeChunk!(new Uint8Array(3))).then(
    () => assert.fail("the write should have failed"),
    (error) => error,
  );
  assert.ok(error instanceof TransportClosedError, String(error));
  assert.match(error.message, /peer closed/);
  await a.close();
});
