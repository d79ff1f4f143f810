// A thread worker that misbehaves as threads_hostile_test.ts asks: a handler that never yields,
// one that ends its thread with process.exit(), one that reads the environment; on Deno, a
// Worker named `…:spin-at-load` spins as it loads and never serves.
import { serveWorker } from "../serve_worker.ts";

const handlers = {
  echo: <T>(value: T): T => value,
  spin(): never {
    while (true) {
      // Spinning on purpose: the thread never takes another message.
    }
  },
  processExit(code: number): string {
    (globalThis as unknown as { process: { exit(code: number): void } }).process.exit(code);
    return "after exit";
  },
  env(name: string): string | undefined {
    return Deno.env.get(name);
  },
};

/** The API the worker serves. */
export type HostileApi = typeof handlers;

if (String((globalThis as { name?: unknown }).name).endsWith(":spin-at-load")) {
  while (true) {
    // Spinning on purpose, before serveWorker.
  }
}
await serveWorker(handlers);
