/**
 * Transports between threads over `postMessage`: the parent side over a `Worker`, the worker
 * side over the worker's own global scope, or either side over a `MessagePort`. Bytes travel
 * as transferred `ArrayBuffer`s, small writes coalesced into one message, and a credit window
 * bounds what the peer holds unread, so a fast writer waits for a slow reader instead of
 * growing its message queue.
 *
 * @example A channel to a module worker
 * ```ts ignore
 * // main.ts
 * import { openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { workerTransport } from "@conduit/ipc/transports/web_worker";
 *
 * const worker = new Worker(new URL("./worker.ts", import.meta.url), { type: "module" });
 * const channel = await openChannel<{ add(n: [number, number]): number }>(
 *   workerTransport(worker),
 *   { codec: jsonCodec() },
 * );
 * console.log(await channel.remote.add([1, 2]));
 * await channel.close();
 * worker.terminate();
 *
 * // worker.ts
 * import { openChannel } from "@conduit/ipc/channel";
 * import { jsonCodec } from "@conduit/ipc/codecs/json";
 * import { selfTransport } from "@conduit/ipc/transports/web_worker";
 *
 * const channel = await openChannel(selfTransport(), {
 *   codec: jsonCodec(),
 *   handlers: { add: ([a, b]: [number, number]) => a + b },
 * });
 * await channel.closed;
 * self.close();
 * ```
 *
 * @module
 */

import { ByteChannelTransport } from "./_byte_channel_transport.ts";
import { HeldEndpoint, type MessageEndpoint, PostMessageChannel } from "./_post_message_channel.ts";
import { spinMicrosOf } from "./_spin.ts";
import { watchSelfClose, watchWorker } from "./_worker_watch.ts";
import { isThread, threadScope } from "../_thread.ts";
import { inWorker } from "../_runtime.ts";
import type { Transport } from "./types.ts";

// One hand-over for every transport and the channel: bytes given up count for all of them.
export { transfer } from "../transfer.ts";

export type { Transport };

/**
 * The default {@linkcode WebWorkerTransportOptions.windowBytes}: 4 MiB.
 *
 * @example
 * ```ts
 * import { DEFAULT_WORKER_WINDOW_BYTES } from "@conduit/ipc/transports/web_worker";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_WORKER_WINDOW_BYTES, 4 * 1024 * 1024);
 * ```
 */
export const DEFAULT_WORKER_WINDOW_BYTES: number = 4 * 1024 * 1024;

/**
 * The default {@linkcode WebWorkerTransportOptions.spinMicros} of
 * {@linkcode workerTransport}, the parent's end: 150 µs. The worker's end
 * ({@linkcode selfTransport}) and {@linkcode messagePortTransport} default to 0.
 *
 * @example
 * ```ts
 * import { DEFAULT_PARENT_SPIN_MICROS } from "@conduit/ipc/transports/web_worker";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_PARENT_SPIN_MICROS, 150);
 * ```
 */
export const DEFAULT_PARENT_SPIN_MICROS: number = 150;

/**
 * Options of {@linkcode workerTransport}, {@linkcode selfTransport} and
 * {@linkcode messagePortTransport}.
 *
 * @example
 * ```ts
 * import {
 *   messagePortTransport,
 *   type WebWorkerTransportOptions,
 * } from "@conduit/ipc/transports/web_worker";
 * import assert from "node:assert/strict";
 *
 * const options: WebWorkerTransportOptions = { windowBytes: 1024 * 1024, spinMicros: 150 };
 * const { port1, port2 } = new MessageChannel();
 * const a = messagePortTransport(port1, options);
 * const b = messagePortTransport(port2, options);
 * await a.close();
 * assert.equal((await b.readable.getReader().read()).done, true);
 * await b.close();
 * ```
 */
export interface WebWorkerTransportOptions {
  /**
   * Bytes sent and not yet read by the peer before a write waits (each message also counts
   * 256 bytes, so a burst of tiny writes is bounded too). Both ends must use the same: an
   * end fails the channel when its peer sends past the window it granted (a peer that ignores
   * it would make this end keep whatever it posts), naming `windowBytes`.
   *
   * @default {DEFAULT_WORKER_WINDOW_BYTES} (4 MiB)
   */
  windowBytes?: number;
  /**
   * Microseconds a side stays awake after it posted, waiting for the peer's answer, before its
   * thread may sleep. A message posted to a thread that went to sleep wakes it through the OS
   * (in a VM, through the hypervisor too), which costs the poster and the wakee far more than
   * a message to a thread still running; waiting awake turns the answer into the cheap kind.
   * The parent's end ({@linkcode workerTransport}) waits 150 µs by default: on an idle machine
   * that takes a small channel call's p50 from behind comlink's to ahead of it (the report's
   * threads section, "small call p50"; `deno run -A bench/report/_threads.ts`); with another
   * process keeping a core busy it does not help. The
   * worker's end ({@linkcode selfTransport}) does not by default: it would spend its CPU after
   * every answer waiting for the next call. Nor does {@linkcode messagePortTransport}: its peer
   * may run in the same thread, where no answer can come while it waits.
   *
   * A side that waits sends the peer a `SharedArrayBuffer` of 8 bytes, in which the peer
   * counts what it posted and what it took. A wait ends once the peer posted its answer, or
   * early when the peer has not even taken the message within 70 µs (it is not running, and
   * may be waiting for the very CPU the wait holds). A side with several channels waiting for
   * answers at once does not wait, and when most waits see no answer in time (slow handlers,
   * a busy machine), a side waits only once in 32 posts. 0 never waits.
   *
   * @default {0} ({@linkcode DEFAULT_PARENT_SPIN_MICROS} for {@linkcode workerTransport})
   */
  spinMicros?: number;
}

/**
 * The parent's end of a transport to `worker`, whose code runs {@linkcode selfTransport}.
 * The transport takes the worker's `message` events (post nothing else to it meanwhile).
 * When the worker dies of an uncaught error, or is terminated (`worker.terminate()`), reads
 * and writes fail with `TransportClosedError` naming why, so a channel over it settles every
 * pending call; the worker's error event is handled (`preventDefault`), its error becoming
 * the `cause`. `close()` does not terminate the worker: terminate it once its channel is
 * closed, or let it close itself.
 *
 * @param worker A started Worker.
 * @param options The credit window and the wait for answers (150 µs by default); see
 *   {@linkcode WebWorkerTransportOptions}.
 * @returns The parent's end.
 *
 * @example
 * ```ts
 * import { workerTransport } from "@conduit/ipc/transports/web_worker";
 * import { TransportClosedError } from "@conduit/ipc/errors";
 * import assert from "node:assert/strict";
 *
 * const code = "throw new Error('boom');"; // a worker that dies before it serves
 * const url = `data:application/javascript,${encodeURIComponent(code)}`;
 * const worker = new Worker(url, { type: "module" });
 * const transport = workerTransport(worker);
 * const writer = transport.writable.getWriter();
 * // The write may be taken before the worker fails, or refused if it failed first.
 * const written = writer.write(new Uint8Array([1])).then(() => undefined, (e) => e);
 * const error = await transport.readable.getReader().read().catch((e) => e);
 * assert.ok(error instanceof TransportClosedError);
 * assert.match(error.message, /boom/);
 * const writeError = await written;
 * assert.ok(writeError === undefined || writeError instanceof TransportClosedError);
 * await transport.close();
 * ```
 */
export function workerTransport(
  worker: Worker,
  options: WebWorkerTransportOptions = {},
): Transport {
  if (!isThread(worker)) {
    throw new TypeError(`workerTransport() takes a Worker, got ${describe(worker)}`);
  }
  const label = "Web Worker transport";
  // Until the worker's end listens, what this end posts waits here (see HeldEndpoint).
  const endpoint = new HeldEndpoint(worker as MessageEndpoint);
  const channel: PostMessageChannel = new PostMessageChannel(endpoint, {
    label,
    windowBytes: windowOf(options),
    spinMicros: spinMicrosOf(options.spinMicros, DEFAULT_PARENT_SPIN_MICROS),
    onRelease: () => {
      endpoint.release();
      unwatch();
    },
  });
  const unwatch = watchWorker(worker, label, (error) => channel.fail(error));
  return new ByteChannelTransport(channel);
}

/**
 * The worker's end of a transport to its parent, over the worker's global scope (`self`):
 * run it in the module the parent passed to {@linkcode workerTransport}. It takes the scope's
 * `message` events. If the worker calls `self.close()` while the transport is open, the
 * parent's reads and writes fail with `TransportClosedError` instead of waiting.
 *
 * @param options The credit window; see {@linkcode WebWorkerTransportOptions}.
 * @returns The worker's end.
 * @throws {TypeError} Outside a worker.
 *
 * @example
 * ```ts
 * import { selfTransport } from "@conduit/ipc/transports/web_worker";
 * import assert from "node:assert/strict";
 *
 * // The main thread is no worker.
 * assert.throws(() => selfTransport(), TypeError);
 * ```
 */
export function selfTransport(options: WebWorkerTransportOptions = {}): Transport {
  if (!inWorker()) {
    throw new TypeError("selfTransport() runs inside a Web Worker; use workerTransport() here");
  }
  const channel: PostMessageChannel = new PostMessageChannel(
    threadScope(),
    {
      label: "Web Worker transport (worker side)",
      windowBytes: windowOf(options),
      spinMicros: spinMicrosOf(options.spinMicros, 0),
      onRelease: () => unwatch(),
      announceListening: true,
    },
  );
  const unwatch = watchSelfClose(() => channel.announceGone());
  return new ByteChannelTransport(channel);
}

/**
 * A transport over one end of a `MessageChannel`, for any two contexts (the other end may be
 * sent to a worker, or stay in this one). The transport starts the port, and closes it once
 * released. A port cannot tell when the context holding its other end dies: prefer
 * {@linkcode workerTransport} to a worker you own.
 *
 * @param port One end of a `MessageChannel`; the other runs a transport of its own.
 * @param options The credit window; see {@linkcode WebWorkerTransportOptions}.
 * @returns A transport over `port`.
 *
 * @example
 * ```ts
 * import { messagePortTransport } from "@conduit/ipc/transports/web_worker";
 * import assert from "node:assert/strict";
 *
 * const { port1, port2 } = new MessageChannel();
 * const a = messagePortTransport(port1);
 * const b = messagePortTransport(port2);
 * const writer = a.writable.getWriter();
 * await writer.write(new Uint8Array([1, 2, 3]));
 * await writer.close();
 * assert.deepEqual(await Array.fromAsync(b.readable), [new Uint8Array([1, 2, 3])]);
 * await Promise.all([a.close(), b.close()]);
 * ```
 */
export function messagePortTransport(
  port: MessagePort,
  options: WebWorkerTransportOptions = {},
): Transport {
  if (!(port instanceof MessagePort)) {
    throw new TypeError(`messagePortTransport() takes a MessagePort, got ${describe(port)}`);
  }
  const channel = new PostMessageChannel(port, {
    label: "MessagePort transport",
    windowBytes: windowOf(options),
    spinMicros: spinMicrosOf(options.spinMicros, 0),
    onRelease: () => port.close(),
  });
  port.start();
  return new ByteChannelTransport(channel);
}

function windowOf(options: WebWorkerTransportOptions): number {
  const window = options.windowBytes ?? DEFAULT_WORKER_WINDOW_BYTES;
  if (!Number.isSafeInteger(window) || window < 1024) {
    throw new RangeError(`windowBytes must be an integer of at least 1024, got ${window}`);
  }
  return window;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (typeof value !== "object") return typeof value;
  return value.constructor?.name ?? "object";
}
