/**
 * A transport between two threads over shared memory: one `SharedArrayBuffer` ring per
 * direction, each write copied into the ring in place and published with one atomic store,
 * `Atomics.waitAsync`/`Atomics.notify` for wake-ups. A full ring holds writes back (never
 * drops them); a chunk larger than half the ring travels as a message on a `MessagePort`
 * instead, transferred when given up with {@linkcode transfer}, keeping its place in the
 * byte order.
 *
 * Make both ends' memory with {@linkcode sharedRingPair}, send one end to the other thread
 * (`worker.postMessage(end, [end.port])`), and open {@linkcode sharedRingTransport} on each.
 *
 * @example Both ends in one thread
 * ```ts
 * import { sharedRingPair, sharedRingTransport } from "@conduit/ipc/transports/shared_ring";
 * import assert from "node:assert/strict";
 *
 * const [mine, theirs] = sharedRingPair();
 * const a = sharedRingTransport(mine);
 * const b = sharedRingTransport(theirs);
 * const writer = a.writable.getWriter();
 * await writer.write(new Uint8Array([1, 2, 3]));
 * await writer.close();
 * assert.deepEqual(await Array.fromAsync(b.readable), [new Uint8Array([1, 2, 3])]);
 * await Promise.all([a.close(), b.close()]);
 * ```
 *
 * @module
 */

import { ByteChannelTransport } from "./_byte_channel_transport.ts";
import { HEADER_BYTES, SharedRingChannel } from "./_shared_ring_channel.ts";
import { spinMicrosOf } from "./_spin.ts";
import { watchSelfClose, watchWorker } from "./_worker_watch.ts";
import type { Transport } from "./types.ts";

// One hand-over for every transport and the channel: bytes given up count for all of them.
export { transfer } from "../transfer.ts";

export type { Transport };

/**
 * The default {@linkcode SharedRingPairOptions.ringBytes}: 1 MiB per direction.
 *
 * @example
 * ```ts
 * import { DEFAULT_RING_BYTES } from "@conduit/ipc/transports/shared_ring";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_RING_BYTES, 1024 * 1024);
 * ```
 */
export const DEFAULT_RING_BYTES: number = 1024 * 1024;

/**
 * The default {@linkcode SharedRingTransportOptions.spinMicros}: 50 µs.
 *
 * @example
 * ```ts
 * import { DEFAULT_RING_SPIN_MICROS } from "@conduit/ipc/transports/shared_ring";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_RING_SPIN_MICROS, 50);
 * ```
 */
export const DEFAULT_RING_SPIN_MICROS: number = 50;

/**
 * Options of {@linkcode sharedRingPair}.
 *
 * @example
 * ```ts
 * import { sharedRingPair, type SharedRingPairOptions } from "@conduit/ipc/transports/shared_ring";
 * import assert from "node:assert/strict";
 *
 * const options: SharedRingPairOptions = { ringBytes: 64 * 1024 };
 * const [mine, theirs] = sharedRingPair(options);
 * assert.equal(mine.incoming, theirs.outgoing);
 * mine.port.close();
 * theirs.port.close();
 * ```
 */
export interface SharedRingPairOptions {
  /**
   * The size of each direction's ring: a power of two from 1 KiB to 1 GiB. Chunks larger
   * than half of it go by message instead.
   *
   * @default {DEFAULT_RING_BYTES} (1 MiB)
   */
  ringBytes?: number;
}

/**
 * One end of a shared ring: plain data that can be posted to another thread (with `port` in
 * the transfer list).
 *
 * @example
 * ```ts
 * import { type SharedRingEnd, sharedRingPair } from "@conduit/ipc/transports/shared_ring";
 * import assert from "node:assert/strict";
 *
 * const [mine, theirs]: SharedRingEnd[] = sharedRingPair();
 * assert.ok(mine.outgoing instanceof SharedArrayBuffer);
 * assert.equal(mine.outgoing, theirs.incoming);
 * mine.port.close();
 * theirs.port.close();
 * ```
 */
export interface SharedRingEnd {
  /** The ring this end reads. */
  readonly incoming: SharedArrayBuffer;
  /** The ring this end writes. */
  readonly outgoing: SharedArrayBuffer;
  /** Where chunks too large for the ring go. */
  readonly port: MessagePort;
}

/**
 * Options of {@linkcode sharedRingTransport}.
 *
 * @example
 * ```ts
 * import {
 *   sharedRingPair,
 *   sharedRingTransport,
 *   type SharedRingTransportOptions,
 * } from "@conduit/ipc/transports/shared_ring";
 *
 * const options: SharedRingTransportOptions = { spinMicros: 0 }; // never spin
 * const [mine, theirs] = sharedRingPair();
 * await Promise.all([sharedRingTransport(mine, options).close(), sharedRingTransport(theirs).close()]);
 * ```
 */
export interface SharedRingTransportOptions {
  /**
   * How long a read with nothing to read spins on the ring before it sleeps: a reply that
   * comes within it is seen in well under a microsecond, where a wake-up from sleep costs
   * tens. The thread does nothing else meanwhile; 0 never spins.
   *
   * @default {DEFAULT_RING_SPIN_MICROS} (50)
   */
  spinMicros?: number;
  /**
   * The worker at the other end, on the parent's side: when it dies of an uncaught error or
   * is terminated, reads and writes fail with `TransportClosedError` (as with
   * `workerTransport`). Without it a dead peer is not noticed. (A worker that calls
   * `self.close()` with its end open is noticed either way: its end tells this one.)
   */
  worker?: Worker;
}

/**
 * Makes the memory of a shared ring: two ends, each reading the ring the other writes.
 *
 * @param options The ring size; see {@linkcode SharedRingPairOptions}.
 * @returns The two ends; send one to the other thread.
 * @throws {RangeError} When `ringBytes` is not a power of two from 1 KiB to 1 GiB.
 *
 * @example
 * ```ts
 * import { sharedRingPair } from "@conduit/ipc/transports/shared_ring";
 * import assert from "node:assert/strict";
 *
 * assert.throws(() => sharedRingPair({ ringBytes: 1000 }), RangeError);
 * ```
 */
export function sharedRingPair(
  options: SharedRingPairOptions = {},
): [SharedRingEnd, SharedRingEnd] {
  const ringBytes = options.ringBytes ?? DEFAULT_RING_BYTES;
  if (
    !Number.isInteger(ringBytes) || ringBytes < 1024 || ringBytes > 2 ** 30 ||
    (ringBytes & (ringBytes - 1)) !== 0
  ) {
    throw new RangeError(`ringBytes must be a power of two from 1024 to 2^30, got ${ringBytes}`);
  }
  const aToB = new SharedArrayBuffer(HEADER_BYTES + ringBytes);
  const bToA = new SharedArrayBuffer(HEADER_BYTES + ringBytes);
  const { port1, port2 } = new MessageChannel();
  return [
    { incoming: bToA, outgoing: aToB, port: port1 },
    { incoming: aToB, outgoing: bToA, port: port2 },
  ];
}

/**
 * Opens a transport over one end of a shared ring (made by {@linkcode sharedRingPair}, in
 * this thread or posted from another). Each end is opened once.
 *
 * @param end The end to open.
 * @param options Spinning and the worker to watch; see {@linkcode SharedRingTransportOptions}.
 * @returns The transport.
 * @throws {TypeError} When `end` is not a ring end.
 *
 * @example
 * ```ts
 * import { sharedRingTransport } from "@conduit/ipc/transports/shared_ring";
 * import assert from "node:assert/strict";
 *
 * assert.throws(() => sharedRingTransport({} as never), TypeError);
 * ```
 */
export function sharedRingTransport(
  end: SharedRingEnd,
  options: SharedRingTransportOptions = {},
): Transport {
  if (
    !(end?.incoming instanceof SharedArrayBuffer) || !(end.outgoing instanceof SharedArrayBuffer) ||
    !(end.port instanceof MessagePort)
  ) {
    throw new TypeError("sharedRingTransport() takes an end made by sharedRingPair()");
  }
  const spinMicros = spinMicrosOf(options.spinMicros, DEFAULT_RING_SPIN_MICROS);
  const label = "shared ring transport";
  const worker = options.worker;
  let unwatch: (() => void) | undefined;
  const channel: SharedRingChannel = new SharedRingChannel({
    label,
    incoming: end.incoming,
    outgoing: end.outgoing,
    port: end.port,
    spinMicros,
    onRelease: () => {
      unwatch?.();
      unwatchSelf();
    },
  });
  if (worker !== undefined) unwatch = watchWorker(worker, label, (error) => channel.fail(error));
  const unwatchSelf = watchSelfClose(() => channel.announceGone());
  return new ByteChannelTransport(channel);
}
