// Threads on every runtime, the runtime seam's part beside _spawn.ts: Deno's and Bun's Web
// Workers as they are, and Node's `node:worker_threads` behind the part of a Web Worker that
// conduit uses (postMessage with transfers, `message`, `error` and `close` events, terminate,
// ref and unref; holdThread refs and unrefs either kind). Inside a thread, the scope a
// transport talks through: the worker's global scope on Deno and Bun, `parentPort` on Node.
// (Whether this is a worker thread, and its `workerData`, are _runtime.ts's: a process worker
// asks too, and loads only that.)

import type { Worker as NodeWorker } from "node:worker_threads";
import { nodeBuiltin, onDeno } from "./_runtime.ts";

/** What a thread's end needs of the scope it talks through. */
export interface ThreadScope {
  postMessage(message: unknown, transfer: Transferable[]): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
  removeEventListener(type: "message", listener: (event: MessageEvent) => void): void;
}

/** How a thread starts: its name, Deno's permissions, and data its module can read. */
export interface ThreadStartOptions {
  name: string;
  /** Deno's `deno.permissions` (Deno only). */
  permissions?: Deno.PermissionOptionsObject;
  /** What the thread reads as `workerData` of `node:worker_threads` (Node and Bun). */
  workerData?: unknown;
}

/** Starts `module` as a thread: a module Web Worker, or on Node a `worker_threads` Worker. */
export function startThread(module: URL, options: ThreadStartOptions): Worker {
  if (typeof Worker === "function") {
    return new Worker(module, {
      type: "module",
      name: options.name,
      ...(options.permissions === undefined ? {} : { deno: { permissions: options.permissions } }),
      // Bun's workers see no name; they read this as `workerData`.
      ...(onDeno() ? {} : { workerData: options.workerData }),
    });
  }
  return new NodeThread(module, options) as unknown as Worker;
}

/**
 * Lets `thread` keep the process alive (`hold`) or not: Bun's Worker and Node's thread have
 * `ref()` and `unref()`. Deno's Worker has no public `unref()`; its prototype has one
 * symbol-keyed method taking a boolean, the hook Deno's `node:worker_threads` uses. Without it
 * (another Deno), a thread keeps the program alive until it is closed.
 */
export function holdThread(thread: Worker, hold: boolean): void {
  const own = thread as unknown as { ref?(): void; unref?(): void };
  if (typeof own.ref === "function" && typeof own.unref === "function") {
    if (hold) own.ref();
    else own.unref();
    return;
  }
  const proto = Worker.prototype as unknown as Record<symbol, unknown>;
  const key = Object.getOwnPropertySymbols(proto).find((key) =>
    key.description === undefined && typeof proto[key] === "function"
  );
  if (key !== undefined) (thread as unknown as Record<symbol, (ref: boolean) => void>)[key](hold);
}

/** Whether `value` is a thread {@linkcode startThread} made, or another Web Worker. */
export function isThread(value: unknown): value is Worker {
  return (typeof Worker === "function" && value instanceof Worker) || value instanceof NodeThread;
}

/** The scope this worker thread talks to its parent through. Call it in a worker only. */
export function threadScope(): ThreadScope {
  const scope = globalThis as unknown as Partial<ThreadScope>;
  if (typeof scope.postMessage === "function") return scope as ThreadScope;
  return workerThreads().parentPort as unknown as ThreadScope;
}

/**
 * Ends this worker thread from the inside where its global scope has no `close()` (Bun, Node):
 * `process.exit()` in a worker thread ends the thread, not the process.
 */
export function exitThread(): void {
  (globalThis as unknown as { process: { exit(code: number): never } }).process.exit(0);
}

function workerThreads(): typeof import("node:worker_threads") {
  return nodeBuiltin<typeof import("node:worker_threads")>("node:worker_threads");
}

/**
 * Node's `worker_threads` Worker as a Web Worker: `message` events carry the data, an uncaught
 * error in the thread is an `error` event with `message` and `error` (cancelable: conduit
 * handles it), and the thread's end a `close` event with its exit `code`, as Bun's Worker has.
 */
class NodeThread extends EventTarget {
  readonly #thread: NodeWorker;
  /** The `message` listeners, each as the Node listener that calls it. */
  readonly #onMessage = new Map<unknown, (data: unknown) => void>();

  constructor(module: URL, options: ThreadStartOptions) {
    super();
    const { Worker } = workerThreads();
    this.#thread = new Worker(module, { name: options.name, workerData: options.workerData });
    this.#thread.on("messageerror", () => this.dispatchEvent(new Event("messageerror")));
    this.#thread.on("error", (error: Error) => {
      const event = new Event("error", { cancelable: true });
      this.dispatchEvent(Object.assign(event, { message: error.message, error }));
    });
    this.#thread.on("exit", (code: number) => {
      this.dispatchEvent(Object.assign(new Event("close"), { code }));
    });
  }

  // A message reaches its listeners straight from Node's event, as `{ data }`: no MessageEvent
  // and no EventTarget dispatch per message (the transports read `data` only).
  override addEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions,
  ): void {
    if (type !== "message") return super.addEventListener(type, listener, options);
    if (typeof listener !== "function" || this.#onMessage.has(listener)) return;
    const onMessage = (data: unknown) => listener({ data } as MessageEvent);
    this.#onMessage.set(listener, onMessage);
    this.#thread.on("message", onMessage);
  }

  override removeEventListener(
    type: string,
    listener: EventListenerOrEventListenerObject | null,
    options?: boolean | EventListenerOptions,
  ): void {
    if (type !== "message") return super.removeEventListener(type, listener, options);
    const onMessage = this.#onMessage.get(listener);
    if (onMessage === undefined) return;
    this.#onMessage.delete(listener);
    this.#thread.off("message", onMessage);
  }

  postMessage(message: unknown, transfer: Transferable[] = []): void {
    this.#thread.postMessage(message, transfer as never);
  }

  terminate(): void {
    void this.#thread.terminate();
  }

  ref(): void {
    this.#thread.ref();
  }

  unref(): void {
    this.#thread.unref();
  }
}
