import assert from "node:assert/strict";
import { stuckSocketPeer, testTransportConformance } from "./_conformance.ts";
import {
  checkSocketFile,
  connectPair,
  echoOnce,
  leaveStaleSocket,
  tempDir,
  unix,
} from "./_test_pairs.ts";
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
  const path = await checkSocketFile(dir, listenUnix);
  await assert.rejects(connectUnix(path), Deno.errors.NotFound);
  await Deno.remove(dir);
});

Deno.test("unix: a stale socket file left by a killed process is replaced", async () => {
  const dir = await tempDir();
  const path = `${dir}/app.sock`;
  await leaveStaleSocket(path);
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

Deno.test("unix: of 20 concurrent listens on one path exactly one wins, the rest get AddrInUse", async () => {
  for (const stale of [false, true]) {
    const dir = await tempDir();
    const path = `${dir}/app.sock`;
    if (stale) await leaveStaleSocket(path);
    const results = await Promise.allSettled(
      Array.from({ length: 20 }, () => listenUnix(path)),
    );
    const won = results.flatMap((r) => r.status === "fulfilled" ? [r.value] : []);
    const lost = results.flatMap((r) => r.status === "rejected" ? [r.reason] : []);
    assert.equal(won.length, 1, `stale=${stale}: ${won.length} listeners won`);
    for (const error of lost) assert.ok(error instanceof Deno.errors.AddrInUse, String(error));
    // Each loser's probe reached the winner as a connection that closed at once.
    for (const _ of lost) await (await won[0].accept()).close();
    // The one winner is the listener clients reach.
    const [a, b] = await connectPair(won[0], () => connectUnix(path));
    await echoOnce(a, b);
    await closeAndRemove(won[0], dir);
  }
});

Deno.test("unix: of two processes listening on one path at once exactly one wins", async () => {
  const dir = await tempDir();
  const path = `${dir}/app.sock`;
  await leaveStaleSocket(path);
  const script = `
    import { listenUnix } from ${JSON.stringify(new URL("./unix.ts", import.meta.url).href)};
    const results = await Promise.allSettled(Array.from({ length: 10 }, () => listenUnix(${
    JSON.stringify(path)
  })));
    const won = results.filter((r) => r.status === "fulfilled");
    const odd = results.filter((r) => r.status === "rejected" && !(r.reason instanceof Deno.errors.AddrInUse));
    console.log(JSON.stringify({ won: won.length, odd: odd.map((r) => String(r.reason)) }));
    await Deno.stdin.readable.pipeTo(new WritableStream());
    for (const r of won) await r.value.close();
  `;
  const children = [0, 1].map(() =>
    new Deno.Command(Deno.execPath(), {
      args: ["eval", script],
      stdin: "piped",
      stdout: "piped",
    }).spawn()
  );
  const reports = await Promise.all(children.map(async (child) => {
    const reader = child.stdout.pipeThrough(new TextDecoderStream()).getReader();
    let line = "";
    while (!line.includes("\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      line += value;
    }
    await reader.cancel();
    return JSON.parse(line) as { won: number; odd: string[] };
  }));
  await Promise.all(children.map((child) => child.stdin.close()));
  for (const child of children) assert.equal((await child.status).code, 0);
  assert.deepEqual(reports.map((r) => r.odd), [[], []]);
  assert.equal(reports[0].won + reports[1].won, 1, JSON.stringify(reports));
  await assert.rejects(Deno.lstat(path), Deno.errors.NotFound);
  await Deno.remove(dir, { recursive: true });
});

Deno.test("unix: listenUnix works with permissions scoped to the socket's directory and path", async () => {
  const dir = await tempDir();
  const path = `${dir}/app.sock`;
  const script = `
    import { connectUnix, listenUnix } from ${
    JSON.stringify(new URL("./unix.ts", import.meta.url).href)
  };
    const listener = await listenUnix(${JSON.stringify(path)});
    const mode = (await Deno.lstat(${JSON.stringify(path)})).mode & 0o777;
    const accepted = listener.accept();
    const client = await connectUnix(${JSON.stringify(path)});
    const server = await accepted;
    await client.writable.getWriter().write(new Uint8Array([7]));
    const { value } = await server.readable.getReader().read();
    await Promise.all([client.close(), server.close()]);
    await listener.close();
    console.log(JSON.stringify({ mode, byte: value[0], left: [...Deno.readDirSync(${
    JSON.stringify(dir)
  })].map((e) => e.name) }));
  `;
  // `deno eval` grants every permission: run the script as a file with only these grants.
  const file = `${dir}/main.ts`;
  await Deno.writeTextFile(file, script);
  const { code, stdout, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["run", `--allow-read=${dir}`, `--allow-write=${dir}`, `--allow-net=unix:${path}`, file],
  }).output();
  const text = new TextDecoder();
  assert.equal(code, 0, text.decode(stderr));
  assert.deepEqual(JSON.parse(text.decode(stdout)), { mode: 0o600, byte: 7, left: ["main.ts"] });
  await Deno.remove(dir, { recursive: true });
});

/** Leaves a socket file at `path` whose listener is gone, as a killed process does. */
async function rejectsWith(
  promise: Promise<unknown>,
  type: new (...args: never[]) => Error,
  message: RegExp,
): Promise<void> {
  const error = await promise.then(() => undefined, (e) => e);
  assert.ok(error instanceof type, `expected ${type.name}, got ${error}`);
  assert.match(error.message, message);
}

async function closeAndRemove(listener: Listener, dir: string): Promise<void> {
  await listener.close();
  await Deno.remove(dir, { recursive: true });
}
