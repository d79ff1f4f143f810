import assert from "node:assert/strict";
import { stuckSocketPeer, testTransportConformance } from "./_conformance.ts";
import { connectPair, unix } from "./_test_pairs.ts";
import { connectUnix, listenUnix, MAX_UNIX_PATH_BYTES } from "./unix.ts";
import type { Listener, Transport } from "./types.ts";

testTransportConformance({
  name: "unix",
  pair: unix.pair,
  stuckPeer: async () => {
    const dir = await tempDir();
    const listener = await listenUnix(`${dir}/s`);
    return stuckSocketPeer(
      listener,
      `await Deno.connect({ transport: "unix", path: ${JSON.stringify(`${dir}/s`)} })`,
      () => Deno.remove(dir, { recursive: true }),
    );
  },
  abortSeenByPeer: "end",
});

Deno.test("unix: the socket file is owner-only, and removed on close", async () => {
  const dir = await tempDir();
  const listener = await listenUnix(`${dir}/app.sock`);
  const info = await Deno.lstat(`${dir}/app.sock`);
  assert.ok(info.isSocket);
  assert.equal(info.mode! & 0o777, 0o600);
  assert.deepEqual(listener.addr, { transport: "unix", path: `${dir}/app.sock` });
  // Nothing but the socket is left in the directory (the private bind directory is gone).
  assert.deepEqual((await Array.fromAsync(Deno.readDir(dir))).map((e) => e.name), ["app.sock"]);
  await listener.close();
  await assert.rejects(Deno.lstat(`${dir}/app.sock`), Deno.errors.NotFound);
  await assert.rejects(connectUnix(`${dir}/app.sock`), Deno.errors.NotFound);
  await Deno.remove(dir);
});

Deno.test("unix: a stale socket file left by a killed process is replaced", async () => {
  const dir = await tempDir();
  const path = `${dir}/app.sock`;
  const child = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `Deno.listen({ transport: "unix", path: ${
        JSON.stringify(path)
      } }); console.log("ready"); setInterval(() => {}, 60_000);`,
    ],
    stdout: "piped",
  }).spawn();
  const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
  assert.equal((await reader.read()).value?.trim(), "ready");
  child.kill("SIGKILL");
  await child.status;
  await reader.cancel();
  assert.ok((await Deno.lstat(path)).isSocket, "the dead process left its socket file");
  await assert.rejects(connectUnix(path), Deno.errors.ConnectionRefused);

  const listener = await listenUnix(path);
  const [a, b] = await connectPair(listener, () => connectUnix(path));
  await echoOnce(a, b);
  await closeAndRemove(listener, dir);
});

Deno.test("unix: a live listener's socket is never taken over", async () => {
  const dir = await tempDir();
  const path = `${dir}/app.sock`;
  const first = await listenUnix(path);
  const { ino } = await Deno.lstat(path);
  // The probe connection reaches the live listener; accept and drop it.
  const accepting = first[Symbol.asyncIterator]().next();
  await rejectsWith(listenUnix(path), Deno.errors.AddrInUse, /a live listener serves it/);
  await (await accepting).value!.close();
  assert.equal((await Deno.lstat(path)).ino, ino);
  const [a, b] = await connectPair(first, () => connectUnix(path));
  await echoOnce(a, b);
  await closeAndRemove(first, dir);
});

Deno.test("unix: a file that is not a socket is left alone", async () => {
  const dir = await tempDir();
  await Deno.writeTextFile(`${dir}/data`, "keep me");
  await rejectsWith(listenUnix(`${dir}/data`), Deno.errors.AlreadyExists, /is not a socket/);
  assert.equal(await Deno.readTextFile(`${dir}/data`), "keep me");
  await Deno.remove(dir, { recursive: true });
});

Deno.test("unix: a path too long for the OS is a RangeError naming the limit", async () => {
  const path = `/tmp/${"x".repeat(MAX_UNIX_PATH_BYTES)}`;
  await rejectsWith(
    listenUnix(path),
    RangeError,
    new RegExp(`is ${MAX_UNIX_PATH_BYTES + 5} bytes, more than the ${MAX_UNIX_PATH_BYTES}`),
  );
});

Deno.test("unix: a path near the limit binds in place, still owner-only", async () => {
  const dir = await tempDir();
  const path = `${dir}/${"x".repeat(MAX_UNIX_PATH_BYTES - dir.length - 1)}`;
  assert.equal(path.length, MAX_UNIX_PATH_BYTES);
  const listener = await listenUnix(path);
  assert.equal((await Deno.lstat(path)).mode! & 0o777, 0o600);
  const [a, b] = await connectPair(listener, () => connectUnix(path));
  await echoOnce(a, b);
  await closeAndRemove(listener, dir);
  await assert.rejects(Deno.lstat(path), Deno.errors.NotFound);
});

Deno.test("unix: a listener yields one transport per connection and close() ends iteration", async () => {
  const dir = await tempDir();
  const listener = await listenUnix(`${dir}/s`);
  const accepted: Transport[] = [];
  const serving = (async () => {
    for await (const t of listener) accepted.push(t);
  })();
  const clients = await Promise.all([1, 2, 3].map(() => connectUnix(`${dir}/s`)));
  while (accepted.length < 3) await new Promise((resolve) => setTimeout(resolve, 5));
  await Promise.all([listener.close(), listener.close()]);
  await serving; // ends, although an accept was pending
  await Promise.all([...clients, ...accepted].map((t) => t.close()));
  await assert.rejects(Deno.lstat(`${dir}/s`), Deno.errors.NotFound);
  await Deno.remove(dir);
});

Deno.test("unix: close() leaves no socket file when its file was replaced meanwhile", async () => {
  const dir = await tempDir();
  const listener = await listenUnix(`${dir}/s`);
  // Someone moves our socket away and puts a file of their own in its place.
  await Deno.rename(`${dir}/s`, `${dir}/moved`);
  await Deno.writeTextFile(`${dir}/s`, "theirs");
  await listener.close();
  assert.equal(await Deno.readTextFile(`${dir}/s`), "theirs");
  await Deno.remove(dir, { recursive: true });
});

async function rejectsWith(
  promise: Promise<unknown>,
  type: new (...args: never[]) => Error,
  message: RegExp,
): Promise<void> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
  assert.match(error.message, message);
}

function tempDir(): Promise<string> {
  return Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
}

async function echoOnce(a: Transport, b: Transport): Promise<void> {
  const writer = a.writable.getWriter();
  await writer.write(new Uint8Array([1, 2, 3]));
  await writer.close();
  assert.deepEqual(await Array.fromAsync(b.readable), [new Uint8Array([1, 2, 3])]);
  await Promise.all([a.close(), b.close()]);
}

async function closeAndRemove(listener: Listener, dir: string): Promise<void> {
  await listener.close();
  await Deno.remove(dir, { recursive: true });
}
