// Hostile and buggy peers of the thread transports: a worker that writes into the shared ring
// by hand, or posts to its parent by hand, must not corrupt this side's reads, hold up its
// thread or make it keep memory the peer can still change.

import assert from "node:assert/strict";
import { TransportClosedError } from "../errors.ts";
import { type SharedRingEnd, sharedRingPair, sharedRingTransport } from "./shared_ring.ts";
import { workerTransport } from "./web_worker.ts";

const ringWriterUrl = new URL("./_testdata/_hostile_ring_writer.ts", import.meta.url);
const ringVictimUrl = new URL("./_testdata/_hostile_ring_victim.ts", import.meta.url);
const postPeerUrl = new URL("./_testdata/_hostile_post_peer.ts", import.meta.url);

const RING_BYTES = 1024;

/** Starts the hostile ring writer on `end`; resolves once it wrote its scenario. */
function ringWriter(end: SharedRingEnd, scenario: string): { worker: Worker; done: Promise<void> } {
  const worker = new Worker(ringWriterUrl, { type: "module" });
  const done = new Promise<void>((resolve) => {
    worker.onmessage = () => resolve();
  });
  worker.postMessage({ end, scenario }, [end.port]);
  return { worker, done };
}

/** The first read of a ring whose peer wrote `scenario`: a chunk, or what the read threw. */
async function firstReadAfter(scenario: string): Promise<Uint8Array | null | unknown> {
  const [mine, theirs] = sharedRingPair({ ringBytes: RING_BYTES });
  const { worker, done } = ringWriter(theirs, scenario);
  const transport = sharedRingTransport(mine, { worker, spinMicros: 0 });
  try {
    await done;
    const reader = transport.readable.getReader();
    const result = await reader.read().then(({ value }) => value ?? null, (error) => error);
    reader.releaseLock();
    return result;
  } finally {
    await transport.close();
    worker.terminate();
  }
}

for (
  const [scenario, what] of [
    ["overlong", "a record longer than what was published"],
    ["huge", "a record that says it holds 2 GiB"],
    ["past-the-ring", "a write position more than a ring ahead of the read position"],
  ]
) {
  Deno.test(`threads attack: ${what} fails the read, with no bytes the peer did not write`, async () => {
    const result = await firstReadAfter(scenario);
    if (result instanceof Uint8Array) {
      assert.fail(
        `the read gave ${result.length} bytes from a ring of ${RING_BYTES} holding 4 at most`,
      );
    }
    assert.ok(result instanceof TransportClosedError, `got ${result}`);
    assert.match(result.message, /corrupt/);
  });
}

Deno.test("threads hostile: a write position between two records does not hold the reading thread", async () => {
  // The reader runs in a worker of its own: were its thread stuck, only terminate() ends it.
  const victim = new Worker(ringVictimUrl, { type: "module" });
  const [mine, theirs] = sharedRingPair({ ringBytes: RING_BYTES });
  const answer = new Promise<string>((resolve) => {
    victim.onmessage = (event) => resolve(event.data);
  });
  victim.postMessage(mine, [mine.port]);
  const { worker, done } = ringWriter(theirs, "misaligned");
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await done;
    const said = await Promise.race([
      answer,
      new Promise<string>((resolve) => timer = setTimeout(() => resolve("no answer in 3 s"), 3000)),
    ]);
    assert.match(said, /^error TransportClosedError: .*corrupt/);
  } finally {
    clearTimeout(timer);
    victim.terminate();
    worker.terminate();
  }
});

Deno.test("threads hostile: a chunk too large for the ring sent as shared memory is not read as the peer's to change", async () => {
  const result = await firstReadAfter("shared-oversized");
  if (result instanceof Uint8Array) {
    assert.ok(
      !(result.buffer instanceof SharedArrayBuffer),
      "the read gave a view of memory the peer shares and keeps changing",
    );
  } else assert.ok(result instanceof TransportClosedError, `got ${result}`);
});

Deno.test("threads hostile: chunks flooding the ring's side channel fail the channel rather than pile up", async () => {
  const [mine, theirs] = sharedRingPair({ ringBytes: RING_BYTES });
  const { worker, done } = ringWriter(theirs, "oversized-flood");
  const transport = sharedRingTransport(mine, { worker, spinMicros: 0 });
  const reader = transport.readable.getReader();
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    await done;
    const result = await Promise.race([
      reader.read().then(({ value }) => value, (error) => error),
      new Promise((resolve) => timer = setTimeout(() => resolve("no answer in 2 s"), 2000)),
    ]);
    assert.ok(result instanceof TransportClosedError, `got ${result}`);
    assert.match(result.message, /a second chunk/);
  } finally {
    clearTimeout(timer);
    reader.releaseLock();
    await transport.close();
    worker.terminate();
  }
});

/** Starts the hostile postMessage peer with `scenario` under workerTransport. */
async function postPeer(scenario: string) {
  const worker = new Worker(postPeerUrl, { type: "module" });
  const transport = workerTransport(worker, { spinMicros: 0 });
  const done = new Promise<void>((resolve) => {
    worker.addEventListener("message", (event) => {
      if (event.data === "done") resolve();
    });
  });
  worker.postMessage(scenario);
  await done;
  // Lets the messages posted before "done" reach the transport.
  await new Promise((resolve) => setTimeout(resolve, 20));
  return {
    transport,
    async [Symbol.asyncDispose]() {
      await transport.close();
      worker.terminate();
    },
  };
}

Deno.test("threads hostile: data posted as a view of shared memory is not read as the peer's to change", async () => {
  await using peer = await postPeer("shared");
  const reader = peer.transport.readable.getReader();
  for (let i = 0; i < 2; i++) {
    const result = await reader.read().then(({ value }) => value, (error) => error);
    if (result instanceof Uint8Array) {
      assert.ok(
        !(result.buffer instanceof SharedArrayBuffer),
        "the read gave a view of memory the peer shares and keeps changing",
      );
    } else {
      assert.ok(result instanceof TransportClosedError, `got ${result}`);
      break;
    }
  }
  reader.releaseLock();
});

Deno.test("threads hostile: a peer that posts past its credit window fails the channel rather than pile up", async () => {
  // 64 MiB posted against the default window of 4 MiB, with nothing read meanwhile.
  await using peer = await postPeer("flood");
  const reader = peer.transport.readable.getReader();
  const result = await reader.read().then(({ value }) => value, (error) => error);
  reader.releaseLock();
  if (result instanceof Uint8Array) {
    assert.fail(`the read gave ${result.length} bytes of a flood the peer had no credit for`);
  }
  assert.ok(result instanceof TransportClosedError, `got ${result}`);
  assert.match(result.message, /credit window/);
});
