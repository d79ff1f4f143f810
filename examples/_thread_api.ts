/**
 * The API of examples/_thread_worker.ts, and the per-method codecs both ends configure.
 *
 * @module
 */

import type { MethodCodec } from "@conduit/ipc/channel";
import { rawCodec } from "@conduit/ipc/codecs/raw";

/** What the worker serves. */
export interface ThreadApi {
  /** Counts the primes below `limit`: CPU work off the main thread. */
  countPrimes(limit: number): number;
  /** Sums the bytes of a buffer (moved here with `transfer`, not copied). */
  checksum(bytes: Uint8Array): number;
  /** Yields `from`, `from - 1`, … 1, as a stream with credit. */
  countdown(from: number): AsyncIterable<number>;
}

/** `checksum`'s bytes pass through as they are, so `transfer` can move them. */
export const THREAD_METHOD_CODECS: Record<string, MethodCodec> = {
  checksum: { param: rawCodec() },
};
