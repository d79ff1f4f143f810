import assert from "node:assert/strict";
import { testTransportConformance } from "./_conformance.ts";
import { resizePipes } from "./_byte_channel_transport.ts";
import { childTransport, spawnTransport, stdioTransport } from "./stdio.ts";
import type { Transport } from "./types.ts";
import { listenUnix } from "./unix.ts";

const RELAY = new URL("../testdata/transports/stdio_relay.ts", import.meta.url).pathname;
const STDIO_MODULE = new URL("./stdio.ts", import.meta.url).href;
/** Pipe sizes can be read and set here (Linux, FFI granted): the pipe buffer tests run. */
const PIPES_RESIZABLE = resizePipes([], 0) !== undefined;
/** More than a pipe must carry before either side resizes it. */
const BUSY_BYTES = 320 * 1024;

// `a` is the parent side of a stdio transport to a real child; the child relays its stdio
// (through stdioTransport) to a Unix socket whose other end is `b`. So every case crosses
// both sides of the stdio transport and a real process.
testTransportConformance({
  name: "stdio",
  pair: async () => {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
    const listener = await listenUnix(`${dir}/s`);
    const accepting = listener[Symbol.asyncIterator]().next();
    const a = spawnTransport(Deno.execPath(), { args: ["run", "-A", RELAY, `${dir}/s`] });
    const exited = a.status.then((status) => {
      throw new Error(`the relay exited before connecting: ${JSON.stringify(status)}`);
    });
    const b = (await Promise.race([accepting, exited])).value!;
    return {
      a,
      b,
      cleanup: async () => {
        await listener.close();
        await Deno.remove(dir, { recursive: true });
      },
    };
  },
  stuckPeer: () => {
    const transport = spawnTransport(Deno.execPath(), {
      args: ["eval", "setInterval(() => {}, 60_000)"],
    });
    return Promise.resolve({
      transport,
      kill: async () => {
        Deno.kill(transport.pid, "SIGKILL");
        await transport.status;
      },
    });
  },
  abortSeenByPeer: "end",
});

Deno.test("stdio: stderr lines go to the callback, and a loud stderr never blocks the child", async () => {
  const lines: string[] = [];
  const child = spawnTransport(Deno.execPath(), {
    args: [
      "eval",
      `const e = new TextEncoder();
       await Deno.stderr.write(e.encode("one\\r\\ntw"));
       await Deno.stderr.write(e.encode("o\\n" + "x".repeat(200_000) + "\\nlast"));`,
    ],
    stderr: (line) => lines.push(line),
  });
  assert.equal((await child.status).code, 0);
  await child.close();
  assert.deepEqual(lines.map((l) => l.length > 20 ? `${l[0]}*${l.length}` : l), [
    "one",
    "two",
    "x*65536",
    "x*65536",
    "x*65536",
    "x*3392",
    "last",
  ]);
});

Deno.test("stdio: a discarded stderr is not a pipe the child can fill", async () => {
  const child = spawnTransport(Deno.execPath(), {
    args: ["eval", `await Deno.stderr.write(new Uint8Array(1 << 20))`],
    stderr: "discard",
  });
  assert.equal((await child.status).code, 0);
  await child.close();
});

Deno.test("stdio: close() kills a child that outlives its stdin, after exitTimeout", async () => {
  const child = spawnTransport(Deno.execPath(), {
    args: ["eval", "setInterval(() => {}, 60_000)"],
    exitTimeout: 50,
  });
  await child.close();
  const status = await child.status;
  assert.equal(status.signal, "SIGKILL");
});

Deno.test("stdio: abort() kills the child at once", async () => {
  const child = spawnTransport(Deno.execPath(), {
    args: ["eval", "setInterval(() => {}, 60_000)"],
  });
  const reason = new Error("stop");
  await child.abort(reason);
  assert.equal((await child.status).signal, "SIGKILL");
  const error = await child.readable.getReader().read().catch((e) => e);
  assert.equal(error.cause, reason);
});

Deno.test("stdio: close() returns once the child exits, although a grandchild holds its stdout", async () => {
  let grandchild = 0;
  const child = spawnTransport(Deno.execPath(), {
    args: [
      "eval",
      `const g = new Deno.Command("sleep", { args: ["30"], stdout: "inherit" }).spawn();
       console.error(g.pid);
       g.unref();`,
    ],
    stderr: (line) => grandchild = Number(line),
  });
  assert.equal((await child.status).code, 0);
  await child.close();
  assert.ok(grandchild > 0);
  Deno.kill(grandchild, "SIGKILL");
});

Deno.test("stdio: childTransport() wraps a child you spawned, draining its piped stderr", async () => {
  const spawned = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      `await Deno.stderr.write(new Uint8Array(1 << 20));
       await Deno.stdin.readable.pipeTo(Deno.stdout.writable);`,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "piped",
  }).spawn();
  const transport = childTransport(spawned);
  assert.equal(transport.pid, spawned.pid);
  await echoOnce(transport);
  assert.equal((await transport.status).code, 0);
});

Deno.test("stdio: childTransport() refuses a child whose stdin is not piped", async () => {
  const spawned = new Deno.Command("true", { stdout: "piped" }).spawn();
  assert.throws(() => childTransport(spawned), TypeError);
  await spawned.stdout.cancel();
  await spawned.status;
});

Deno.test("stdio: spawning a program that does not exist throws NotFound", () => {
  assert.throws(() => spawnTransport("/nonexistent/program"), Deno.errors.NotFound);
});

Deno.test("stdio: the child side delivers small (sync) and large (async) writes in order", async () => {
  // The relay's writes to its stdout take both paths: 1 B and 1 MiB chunks.
  const code = `
    import { stdioTransport } from ${JSON.stringify(new URL("./stdio.ts", import.meta.url).href)};
    const t = stdioTransport({ syncWriteMaxBytes: 1024 });
    const w = t.writable.getWriter();
    await w.write(new Uint8Array([7]));
    await w.write(new Uint8Array(1 << 20).fill(8));
    await w.write(new Uint8Array([9]));
    await w.close();
    await t.close();`;
  const child = spawnTransport(Deno.execPath(), { args: ["eval", code] });
  const bytes = new Uint8Array(await new Response(child.readable).arrayBuffer());
  assert.equal(bytes.length, 2 + (1 << 20));
  assert.equal(bytes[0], 7);
  assert.ok(bytes.subarray(1, 1 + (1 << 20)).every((b) => b === 8));
  assert.equal(bytes.at(-1), 9);
  await child.close();
  assert.equal((await child.status).code, 0);
});

Deno.test({
  name: "stdio: the parent enlarges each pipe of a child once it is busy",
  ignore: !PIPES_RESIZABLE,
  fn: async () => {
    const child = spawnTransport("cat", { pipeBufferBytes: 512 * 1024 });
    assert.deepEqual(pipeSizes(child.pid), [65536, 65536]);
    await echo(child, 64 * 1024);
    assert.deepEqual(pipeSizes(child.pid), [65536, 65536], "64 KiB is not busy yet");
    await echo(child, BUSY_BYTES);
    assert.deepEqual(pipeSizes(child.pid), [512 * 1024, 512 * 1024]);
    await child.close();
  },
});

Deno.test({
  name: "stdio: pipeBufferBytes 0 leaves the pipes at the OS default",
  ignore: !PIPES_RESIZABLE,
  fn: async () => {
    const child = spawnTransport("cat", { pipeBufferBytes: 0 });
    await echo(child, BUSY_BYTES);
    assert.deepEqual(pipeSizes(child.pid), [65536, 65536]);
    await child.close();
  },
});

Deno.test({
  name: "stdio: the child side enlarges its busy stdin and stdout when FFI is granted",
  ignore: !PIPES_RESIZABLE,
  fn: async () => {
    const code = `
      import { stdioTransport } from ${JSON.stringify(STDIO_MODULE)};
      const t = stdioTransport({ pipeBufferBytes: 256 * 1024 });
      await t.readable.pipeTo(t.writable);
      await t.close();`;
    // `deno eval` grants every permission; the parent leaves the pipes alone.
    const child = spawnTransport(Deno.execPath(), { args: ["eval", code], pipeBufferBytes: 0 });
    await echo(child, BUSY_BYTES);
    assert.deepEqual(pipeSizes(child.pid), [256 * 1024, 256 * 1024]);
    await child.close();
    assert.equal((await child.status).code, 0);
  },
});

Deno.test({
  name: "stdio: a child without FFI permission keeps its pipes and never prompts",
  ignore: !PIPES_RESIZABLE,
  fn: async () => {
    const dir = await Deno.makeTempDir({ prefix: "conduit-stdio-" });
    const program = `${dir}/echo.ts`;
    await Deno.writeTextFile(
      program,
      `import { stdioTransport } from ${JSON.stringify(STDIO_MODULE)};
       const t = stdioTransport();
       await t.readable.pipeTo(t.writable);
       await t.close();`,
    );
    const child = spawnTransport(Deno.execPath(), {
      args: ["run", "--no-prompt", program],
      pipeBufferBytes: 0,
    });
    await echo(child, BUSY_BYTES);
    assert.deepEqual(pipeSizes(child.pid), [65536, 65536]);
    await child.close();
    assert.equal((await child.status).code, 0);
    await Deno.remove(dir, { recursive: true });
  },
});

Deno.test("stdio: pipeBufferBytes must be a whole number of bytes, checked before spawning", () => {
  for (const pipeBufferBytes of [-1, 0.5, NaN, Infinity]) {
    assert.throws(
      () => spawnTransport("/nonexistent/program", { pipeBufferBytes }),
      (error: Error) =>
        error instanceof RangeError && error.message.includes(`got ${pipeBufferBytes}`),
    );
    assert.throws(() => stdioTransport({ pipeBufferBytes }), RangeError);
  }
});

/** The buffer sizes of `pid`'s stdin and stdout pipes. */
function pipeSizes(pid: number): number[] | undefined {
  return resizePipes([`/proc/${pid}/fd/0`, `/proc/${pid}/fd/1`], 0);
}

/** Sends `bytes` through an echoing child and reads them back, leaving the transport open. */
async function echo(transport: Transport, bytes: number): Promise<void> {
  const writer = transport.writable.getWriter();
  const reader = transport.readable.getReader();
  const chunk = new Uint8Array(16 * 1024).fill(5);
  const writing = (async () => {
    for (let sent = 0; sent < bytes; sent += chunk.length) await writer.write(chunk);
  })();
  let received = 0;
  while (received < bytes) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`the child stopped echoing after ${received} bytes`);
    assert.ok(value.every((b) => b === 5));
    received += value.length;
  }
  await writing;
  assert.equal(received, bytes);
  writer.releaseLock();
  reader.releaseLock();
}

async function echoOnce(transport: Transport): Promise<void> {
  const writer = transport.writable.getWriter();
  await writer.write(new Uint8Array([1, 2, 3]));
  await writer.close();
  assert.deepEqual(await Array.fromAsync(transport.readable), [new Uint8Array([1, 2, 3])]);
  await transport.close();
}

Deno.test("stdio: the child side's readInto() and readable reads, mixed, keep every byte in order", async () => {
  // The child reads its stdin both ways, checks the end and the pending-read rule, and
  // echoes what it read once it has it all; any failure is its exit code.
  const code = `
    import assert from "node:assert/strict";
    import { stdioTransport } from ${JSON.stringify(STDIO_MODULE)};
    const t = stdioTransport();
    assert.equal(typeof t.readInto, "function");
    const reader = t.readable.getReader();
    const pending = reader.read();
    // Let the stream start and pass the read on, then tell the parent to send.
    await new Promise((resolve) => setTimeout(resolve, 0));
    await assert.rejects(t.readInto(new Uint8Array(8)), TypeError);
    const writer = t.writable.getWriter();
    await writer.write(new Uint8Array([0xaa]));
    const chunks = [(await pending).value];
    const sizes = [1, 7, 65536, 100, 300000, 4];
    for (let k = 0;; k++) {
      if (k % 2 === 0) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push(value);
      } else {
        const view = new Uint8Array(sizes[(k >> 1) % sizes.length]);
        const read = await t.readInto(view);
        if (read === null) break;
        assert.equal(read.buffer, view.buffer);
        chunks.push(read);
      }
    }
    assert.equal(await t.readInto(new Uint8Array(8)), null);
    assert.equal((await reader.read()).done, true);
    for (const chunk of chunks) await writer.write(chunk);
    await writer.close();
    await t.close();`;
  const child = spawnTransport(Deno.execPath(), { args: ["eval", code] });
  const sent = new Uint8Array(3 << 20);
  for (let i = 0; i < sent.length; i++) sent[i] = (i * 7 + (i >> 9)) % 251;
  const reader = child.readable.getReader();
  assert.deepEqual((await reader.read()).value, new Uint8Array([0xaa]), "the child is ready");
  const writer = child.writable.getWriter();
  const writing = (async () => {
    for (let i = 0; i < sent.length; i += 50_000) await writer.write(sent.subarray(i, i + 50_000));
    await writer.close();
  })();
  const parts: Uint8Array[] = [];
  for (let r = await reader.read(); !r.done; r = await reader.read()) parts.push(r.value);
  const echoed = new Uint8Array(await new Blob(parts as BlobPart[]).arrayBuffer());
  await writing;
  assert.equal((await child.status).code, 0);
  assert.equal(echoed.length, sent.length);
  assert.ok(echoed.every((byte, i) => byte === sent[i]), "the echo differs from what was sent");
  await child.close();
});

Deno.test("stdio: the parent side's readInto() reads the child's stdout, and null once closed", async () => {
  await using child = spawnTransport("cat");
  assert.equal(typeof child.readInto, "function");
  const writer = child.writable.getWriter();
  await writer.write(new Uint8Array([1, 2, 3]));
  const read = await child.readInto!(new Uint8Array(16));
  assert.deepEqual(read, new Uint8Array([1, 2, 3]));
  writer.releaseLock();
  // close() ends cat's input; cat exits, its stdout ends, and the pending read sees the end.
  const pending = child.readInto!(new Uint8Array(16));
  await child.close();
  assert.equal(await pending, null);
  assert.equal(await child.readInto!(new Uint8Array(16)), null);
});
