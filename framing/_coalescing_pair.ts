// The stream pair behind every encoder stream: payloads in, coalesced chunks out.

import type { BatchPacker } from "./_packer.ts";

// Microtask hops a woken pull waits for more frames before taking the batch, and again for as
// long as frames keep arriving. Frames written through a writer coalesce after 2 hops, a pipeTo
// source needs 5 or more; taking the frames there were at once was several times slower
// (bench/framing_bench.ts, frame/encode-writer and frame/encode-stream). A lone frame waits for
// those hops only, never for a timer or another macrotask: write-then-read round trips ran at the
// same rate with 0 and 32 hops.
const COALESCE_HOPS = 16;

/**
 * Builds a readable/writable pair that packs the payloads written into chunks. The readable
 * has no queue of its own (high-water mark 0): a chunk is packed only when its reader asks,
 * so everything written while the reader is busy joins one batch.
 */
export function coalescingPair(
  packer: BatchPacker,
): ReadableWritablePair<Uint8Array, Uint8Array> {
  // A pull waiting for a frame, and a write waiting for the batch to be taken.
  let wakePull: (() => void) | undefined;
  let wakeWrite: (() => void) | undefined;
  let closed = false;
  let producerWasBlocked = false;
  let failure: { reason: unknown } | undefined;
  let readableController!: ReadableStreamDefaultController<Uint8Array>;
  let writableController!: WritableStreamDefaultController;

  const wakeReader = (): void => {
    const wake = wakePull;
    wakePull = undefined;
    wake?.();
  };
  const wakeWriter = (): void => {
    const wake = wakeWrite;
    wakeWrite = undefined;
    wake?.();
  };
  // Each side fails with the reason the other side failed with, and nobody is left waiting
  // for a wake-up that will never come. The side that failed first is already erroring:
  // erroring it again would, for an abort, turn the abort's own promise into a rejection.
  const fail = (reason: unknown, origin: "readable" | "writable" | "both"): void => {
    if (failure !== undefined) return;
    failure = { reason };
    packer.clear();
    if (origin !== "readable") readableController.error(reason);
    if (origin !== "writable") writableController.error(reason);
    wakeReader();
    wakeWriter();
  };
  const waitForTake = (): Promise<void> =>
    new Promise<void>((resolve) => wakeWrite = resolve).then(() => {
      if (failure !== undefined) throw failure.reason;
    });

  const readable = new ReadableStream<Uint8Array>({
    start(controller) {
      readableController = controller;
    },
    async pull(controller) {
      const waited = packer.empty && !closed;
      if (waited) await new Promise<void>((resolve) => wakePull = resolve);
      // The first frame of a burst woke us, or the last take released a blocked producer
      // that has put one frame back: gather what the rest of the turn writes, until the
      // batch is full or a write waits. Frames that queued while the reader was busy are
      // already a batch and go at once.
      if (waited || producerWasBlocked) {
        let seen = -1;
        while (
          failure === undefined && !closed && wakeWrite === undefined &&
          packer.pendingBytes !== seen && packer.pendingBytes < packer.maxBatchBytes
        ) {
          seen = packer.pendingBytes;
          for (let hop = 0; hop < COALESCE_HOPS; hop++) await undefined;
        }
      }
      if (failure !== undefined) return;
      if (!packer.empty) {
        for (const chunk of packer.take()) controller.enqueue(chunk);
        producerWasBlocked = wakeWrite !== undefined;
        wakeWriter();
      } else if (closed) {
        controller.close();
      }
    },
    cancel(reason) {
      fail(reason, "readable");
    },
  }, { highWaterMark: 0 });

  const writable = new WritableStream<Uint8Array>({
    start(controller) {
      writableController = controller;
      // An abort must not wait for a write that waits for a reader that may never come.
      controller.signal.addEventListener("abort", () => fail(controller.signal.reason, "writable"));
    },
    write(payload): void | Promise<void> {
      if (failure !== undefined) throw failure.reason;
      try {
        packer.check(payload);
      } catch (error) {
        fail(error, "both");
        throw error;
      }
      if (packer.overflows(payload)) return waitForTake().then(() => enqueue(payload));
      enqueue(payload);
    },
    close() {
      closed = true;
      wakeReader();
    },
    abort(reason) {
      fail(reason, "writable");
    },
  });

  function enqueue(payload: Uint8Array): void {
    packer.enqueue(payload);
    wakeReader();
  }

  return { readable, writable };
}
