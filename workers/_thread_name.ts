// How a thread worker knows that spawnWorker started it: the Worker's name (`self.name` in the
// worker) starts with a mark. An environment variable cannot say it, since a thread shares
// its process's environment; and a Web Worker that someone else started does not serve.

import { inWorker } from "../transports/_worker_watch.ts";

const MARK = "conduit-thread:";

/** The Worker name for a thread worker called `name`. */
export function threadWorkerName(name: string): string {
  return MARK + name;
}

/** Whether this code runs in a Web Worker that `spawnWorker(…, { thread: true })` started. */
export function inThreadWorker(): boolean {
  return inWorker() && String((globalThis as { name?: unknown }).name).startsWith(MARK);
}
