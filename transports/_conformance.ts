// The transport conformance suite: one set of cases, registered once per transport by its
// *_test.ts file (Deno.test) and by runtimes/_cases.ts (on Deno, Node and Bun), so every
// transport is held to the same contract (transports/types.ts) on every runtime.

import assert from "node:assert/strict";
import { TransportClosedError } from "../errors.ts";
import type { Listener, Transport } from "./types.ts";
import { type ChildProcessLike, spawnChild } from "../_spawn.ts";
import { execPath, runtimeName } from "../_runtime.ts";

/** Two connected ends, and how to release what made them (listeners, directories). */
export interface TransportPair {
  a: Transport;
  b: Transport;
  cleanup?: () => Promise<void>;
}

/** A transport whose peer is alive but never reads, and a way to kill that peer. */
export interface StuckPeer {
  transport: Transport;
  kill: () => Promise<void>;
  cleanup?: () => Promise<void>;
}

/** A transport under test. */
export interface ConformanceTarget {
  /** Prefix of every test name. */
  name: string;
  /** Makes a fresh connected pair. */
  pair: () => Promise<TransportPair>;
  /** Makes a transport to a peer that never reads (a real process for OS transports). */
  stuckPeer: () => Promise<StuckPeer>;
  /** What the peer's `readable` does after `abort()`: end cleanly, or error. */
  abortSeenByPeer: "end" | "error";
}

const ECHO_SIZES = [1, 2, 100, 4095, 65535, 65536, 65537, 1 << 20, 16 << 20];
const SMALL_WRITES = 100_000;
const BOTH_WAYS_BYTES = 4 << 20;
/** Writes of one reused buffer, large enough to outlast a socket's buffer in flight. */
const REUSED_WRITES = 16;
const REUSED_WRITE_BYTES = 200_000;
const READ_INTO_BYTES = 3 << 20;
const READ_INTO_SIZES = [1, 7, 65_536, 100, 300_000, 4, 1 << 20];

/** Registers the conformance cases for `target` with `Deno.test`. */
export function testTransportConformance(target: ConformanceTarget): void {
  for (const { name, fn } of conformanceCases(target)) Deno.test({ name, fn });
}

/** The conformance cases for `target`, named, for any runtime's test runner. */
export function conformanceCases(
  target: ConformanceTarget,
): { name: string; fn: () => Promise<void> }[] {
  const cases: { name: string; fn: () => Promise<void> }[] = [];
  const test: TestFn = (name, fn) => cases.push({ name: `${target.name}: ${name}`, fn });
  dataCases(target, test);
  closeCases(target, test);
  readIntoCases(target, test);
  return cases;
}

type TestFn = (name: string, fn: () => Promise<void>) => void;

/** Bytes arrive whole and in order, whatever the sizes and directions. */
function dataCases(target: ConformanceTarget, test: TestFn): void {
  test("echoes every size from 1 B to 16 MiB", async () => {
    await withPair(target, async ({ a, b }) => {
      const echo = b.readable.pipeTo(b.writable);
      const writer = a.writable.getWriter();
      const reader = a.readable.getReader();
      for (const [i, size] of ECHO_SIZES.entries()) {
        const sent = pattern(size, i);
        const [, echoed] = await Promise.all([writer.write(sent), readExactly(reader, size)]);
        assertBytesEqual(echoed, sent, `echo of ${size} bytes`);
      }
      await writer.close();
      assert.equal((await reader.read()).done, true);
      await echo;
    });
  });

  test("100k small writes arrive complete, in order, in chunks that stay valid", async () => {
    await withPair(target, async ({ a, b }) => {
      const writer = a.writable.getWriter();
      const writing = (async () => {
        for (let i = 0; i < SMALL_WRITES; i++) {
          const chunk = new Uint8Array(8);
          new DataView(chunk.buffer).setUint32(0, i);
          new DataView(chunk.buffer).setUint32(4, ~i);
          await writer.ready;
          void writer.write(chunk);
        }
        await writer.close();
      })();
      // Keep every chunk and check them only at the end: a transport that reused a read
      // buffer under a chunk it had handed out would show here.
      const chunks = await Array.fromAsync(b.readable);
      await writing;
      const all = concat(chunks);
      assert.equal(all.length, SMALL_WRITES * 8);
      const view = new DataView(all.buffer, all.byteOffset, all.byteLength);
      for (let i = 0; i < SMALL_WRITES; i++) {
        if (view.getUint32(i * 8) !== i || view.getInt32(i * 8 + 4) !== ~i) {
          assert.fail(`write ${i} arrived out of order or damaged`);
        }
      }
    });
  });

  test("a chunk written is the writer's again once its write resolved", async () => {
    await withPair(target, async ({ a, b }) => {
      const writer = a.writable.getWriter();
      const writing = (async () => {
        // One buffer for every write, refilled as soon as the write resolved: the reader
        // must see each fill, never a later one.
        const chunk = new Uint8Array(REUSED_WRITE_BYTES);
        for (let i = 1; i <= REUSED_WRITES; i++) await writer.write(chunk.fill(i));
        chunk.fill(0xff);
        await writer.close();
      })();
      const all = concat(await Array.fromAsync(b.readable));
      await writing;
      assert.equal(all.length, REUSED_WRITES * REUSED_WRITE_BYTES);
      for (let i = 0; i < all.length; i++) {
        const expected = Math.floor(i / REUSED_WRITE_BYTES) + 1;
        if (all[i] !== expected) assert.fail(`byte ${i} is ${all[i]}, written as ${expected}`);
      }
    });
  });

  test("carries both directions at once", async () => {
    await withPair(target, async ({ a, b }) => {
      const send = async (t: Transport, seed: number) => {
        const writer = t.writable.getWriter();
        for (let off = 0; off < BOTH_WAYS_BYTES; off += 65536) {
          await writer.write(pattern(65536, seed + off));
        }
        writer.releaseLock();
      };
      const receive = async (t: Transport) => {
        const reader = t.readable.getReader();
        const bytes = await readExactly(reader, BOTH_WAYS_BYTES);
        reader.releaseLock();
        return bytes;
      };
      const [, , atA, atB] = await Promise.all([send(a, 1), send(b, 2), receive(a), receive(b)]);
      for (let off = 0; off < BOTH_WAYS_BYTES; off += 65536) {
        assertBytesEqual(atB.subarray(off, off + 65536), pattern(65536, 1 + off), "a to b");
        assertBytesEqual(atA.subarray(off, off + 65536), pattern(65536, 2 + off), "b to a");
      }
    });
  });
}

/** Closing, half-closing and aborting, on either side, settle everything. */
function closeCases(target: ConformanceTarget, test: TestFn): void {
  test("close() flushes writes nobody awaited, then the peer's readable ends", async () => {
    await withPair(target, async ({ a, b }) => {
      const writer = a.writable.getWriter();
      const sent = Array.from({ length: 20 }, (_, i) => pattern(10_000, i));
      for (const chunk of sent) void writer.write(chunk).catch(() => {});
      const closing = a.close();
      const received = concat(await Array.fromAsync(b.readable));
      assertBytesEqual(received, concat(sent), "bytes written before close()");
      await b.close();
      await closing;
    });
  });

  test("closing writable half-closes: the peer sees the end and can still reply", async () => {
    await withPair(target, async ({ a, b }) => {
      const aWriter = a.writable.getWriter();
      await aWriter.write(new Uint8Array([1, 2, 3]));
      await aWriter.close();
      assert.deepEqual(concat(await Array.fromAsync(b.readable)), new Uint8Array([1, 2, 3]));
      const bWriter = b.writable.getWriter();
      await bWriter.write(new Uint8Array([4, 5]));
      await bWriter.close();
      assert.deepEqual(concat(await Array.fromAsync(a.readable)), new Uint8Array([4, 5]));
    });
  });

  test("a write after close() or abort() is a TransportClosedError", async () => {
    await withPair(target, async ({ a, b }) => {
      const writer = a.writable.getWriter();
      const closing = a.close();
      await Promise.all([closing, drainAndClose(b)]);
      await assert.rejects(writer.write(new Uint8Array([1])), TransportClosedError);
      await assert.rejects(writer.write(new Uint8Array([1])), TransportClosedError);
      assert.equal(await a.close(), undefined, "close() is idempotent");
    });
    await withPair(target, async ({ a, b }) => {
      const reason = new Error("test abort");
      const writer = a.writable.getWriter();
      await a.abort(reason);
      const error = await writer.write(new Uint8Array([1])).catch((e) => e);
      assert.ok(error instanceof TransportClosedError, `got ${error}`);
      assert.equal(error.cause, reason);
      await drainAndClose(b).catch(() => {});
    });
  });

  test(`abort() errors the local readable; the peer's readable sees ${target.abortSeenByPeer}`, async () => {
    await withPair(target, async ({ a, b }) => {
      const bReader = b.readable.getReader();
      await a.abort(new Error("test abort"));
      await assert.rejects(a.readable.getReader().read(), TransportClosedError);
      if (target.abortSeenByPeer === "end") {
        assert.equal((await bReader.read()).done, true);
      } else {
        await assert.rejects(bReader.read(), TransportClosedError);
      }
      await b.close();
    });
  });

  test("a write to a peer that dies mid-write rejects, never hangs", async () => {
    const { transport, kill, cleanup } = await target.stuckPeer();
    try {
      const writer = transport.writable.getWriter();
      const chunk = new Uint8Array(1 << 20);
      let written = 0;
      const failure = (async () => {
        for (;;) {
          await writer.write(chunk);
          written += chunk.length;
        }
      })().catch((error) => error);
      // Wait until the writes are stuck (the peer reads nothing), then kill it.
      let before = -1;
      while (written !== before) {
        before = written;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      await kill();
      const error = await failure;
      assert.ok(error instanceof TransportClosedError, `got ${error}`);
    } finally {
      await transport.close();
      await cleanup?.();
    }
  });
}

/** readInto() mixes with readable reads, and fails as the readable does. */
function readIntoCases(target: ConformanceTarget, test: TestFn): void {
  test("readInto() mixed with readable reads: every byte, in order, then null", async () => {
    await withPair(target, async ({ a, b }) => {
      // Both directions at once; each end that has readInto reads with both ways, mixed.
      const send = async (t: Transport, seed: number) => {
        const sent = pattern(READ_INTO_BYTES, seed);
        const writer = t.writable.getWriter();
        for (let off = 0; off < sent.length; off += 50_000) {
          await writer.write(sent.subarray(off, off + 50_000));
        }
        await writer.close();
      };
      const receive = async (t: Transport, seed: number) => {
        if (t.readInto === undefined) {
          await drainReadable(t);
          return;
        }
        assertBytesEqual(await readMixed(t, t.readInto), pattern(READ_INTO_BYTES, seed), "mixed");
      };
      await Promise.all([send(a, 1), send(b, 2), receive(b, 1), receive(a, 2)]);
    });
  });

  test("readInto(): TypeError while a read is pending, TransportClosedError after abort()", async () => {
    await withPair(target, async ({ a, b }) => {
      for (const [t, peer] of [[a, b], [b, a]]) {
        if (t.readInto === undefined) continue;
        const reader = t.readable.getReader();
        const pending = reader.read();
        await assert.rejects(t.readInto(new Uint8Array(8)), TypeError);
        const writer = peer.writable.getWriter();
        await writer.write(new Uint8Array([5]));
        writer.releaseLock();
        assert.deepEqual((await pending).value, new Uint8Array([5]));
        reader.releaseLock();
      }
      const reason = new Error("test abort");
      for (const t of [a, b]) {
        if (t.readInto === undefined) continue;
        await t.abort(reason);
        const error = await t.readInto(new Uint8Array(8)).catch((e) => e);
        assert.ok(error instanceof TransportClosedError, `got ${error}`);
        assert.equal(error.cause, reason);
      }
    });
  });

  test("close() and abort() are idempotent and can race", async () => {
    await withPair(target, async ({ a, b }) => {
      await Promise.all([a.close(), a.close(), a.abort(), drainAndClose(b)]);
      await a.close();
      await a.abort();
    });
  });
}

async function withPair(
  target: ConformanceTarget,
  fn: (pair: TransportPair) => Promise<void>,
): Promise<void> {
  const pair = await target.pair();
  try {
    await fn(pair);
  } finally {
    await Promise.all([pair.a.close(), pair.b.close()]);
    await pair.cleanup?.();
  }
}

async function drainReadable(t: Transport): Promise<void> {
  for await (const _ of t.readable);
}

/**
 * Reads `t` to its end, alternating `readable` reads and `readInto` reads of varied sizes,
 * and checks that both ways then see the end.
 */
export async function readMixed(
  t: Transport,
  readInto: (view: Uint8Array) => Promise<Uint8Array | null>,
): Promise<Uint8Array> {
  const reader = t.readable.getReader();
  const chunks: Uint8Array[] = [];
  for (let k = 0;; k++) {
    let chunk: Uint8Array;
    if (k % 2 === 0) {
      const result = await reader.read();
      if (result.done) break;
      chunk = result.value;
    } else {
      const size = READ_INTO_SIZES[(k >> 1) % READ_INTO_SIZES.length];
      const read = await readInto(new Uint8Array(size));
      if (read === null) break;
      // The view may have been transferred to another ArrayBuffer, but it starts there.
      assert.equal(read.byteOffset, 0, "readInto() fills its view from the start");
      assert.ok(
        read.length > 0 && read.length <= size,
        `readInto() read ${read.length} of ${size}`,
      );
      chunk = read;
    }
    chunks.push(chunk);
  }
  assert.equal(await readInto(new Uint8Array(8)), null, "readInto() after the end");
  assert.equal((await reader.read()).done, true, "readable after the end");
  reader.releaseLock();
  return concat(chunks);
}

async function drainAndClose(t: Transport): Promise<void> {
  try {
    for await (const _ of t.readable);
  } finally {
    await t.close();
  }
}

/** Reads exactly `size` bytes, keeping the chunks it was handed until it has them all. */
async function readExactly(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  size: number,
): Promise<Uint8Array> {
  const chunks: Uint8Array[] = [];
  let received = 0;
  while (received < size) {
    const { done, value } = await reader.read();
    if (done) assert.fail(`the stream ended after ${received} of ${size} bytes`);
    chunks.push(value);
    received += value.length;
  }
  assert.equal(received, size, "more bytes than were sent");
  return concat(chunks);
}

function pattern(size: number, seed: number): Uint8Array {
  const bytes = new Uint8Array(size);
  for (let i = 0; i < size; i++) bytes[i] = (i * 31 + seed * 7 + (i >> 8)) & 0xff;
  return bytes;
}

/** `chunks` as one array, in order. */
export function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((sum, c) => sum + c.length, 0));
  let offset = 0;
  for (const chunk of chunks) {
    out.set(chunk, offset);
    offset += chunk.length;
  }
  return out;
}

/** Like assert.deepEqual for bytes, without formatting megabytes on failure. */
function assertBytesEqual(actual: Uint8Array, expected: Uint8Array, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: length`);
  for (let i = 0; i < actual.length; i++) {
    if (actual[i] !== expected[i]) {
      assert.fail(`${what}: byte ${i} is ${actual[i]}, expected ${expected[i]}`);
    }
  }
}

/**
 * Starts this runtime running `code` as a separate process (`deno eval`, `node -e`, `bun -e`:
 * top-level await is Deno's only); the caller kills it and awaits `status`.
 */
export function spawnEval(code: string): ChildProcessLike {
  const args = runtimeName() === "deno" ? ["eval", code] : ["-e", code];
  return spawnChild(execPath(), { args, stdin: "null", stdout: "null", stderr: "inherit" });
}

/** A {@linkcode StuckPeer} whose peer is `child`; its cleanup kills it, then runs `cleanup`. */
export function stuckPeerOf(
  transport: Transport,
  child: ChildProcessLike,
  cleanup?: () => Promise<void>,
): StuckPeer {
  const kill = async () => {
    try {
      child.kill("SIGKILL");
    } catch {
      // Exited already.
    }
    await child.status;
  };
  return {
    transport,
    kill,
    cleanup: async () => {
      await kill();
      await cleanup?.();
    },
  };
}

/**
 * Code for {@linkcode stuckSocketPeer} on Deno: a TLS client of loopback `port` that trusts
 * `ca` and finishes its handshake (so that records, not the handshake, stop).
 */
export function denoTlsClientCode(port: number, ca: string): string {
  return `Deno.connectTls({ port: ${port}, caCerts: [${JSON.stringify(ca)}] })` +
    `.then((c) => c.handshake())`;
}

/** The peer of a socket transport's dies-mid-write case: a process that connects, then idles. */
export async function stuckSocketPeer(
  listener: Listener,
  connectCode: string,
  cleanup?: () => Promise<void>,
): Promise<StuckPeer> {
  const child = spawnEval(`${connectCode}; setInterval(() => {}, 60_000);`);
  const accepted = await listener[Symbol.asyncIterator]().next();
  assert.ok(!accepted.done, "the listener closed before the peer connected");
  return stuckPeerOf(accepted.value, child, async () => {
    await listener.close();
    await cleanup?.();
  });
}
