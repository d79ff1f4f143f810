// How a thread transport's parent side learns that its worker died: an uncaught error raises
// an `error` event, and terminate() raises nothing, so the instance's method is taken over.

import { TransportClosedError } from "../errors.ts";

/**
 * Calls `fail` once `worker` dies of an uncaught error (the event is handled, its error
 * becoming the `cause`), fails to deliver a message, or is terminated. Returns the undo.
 */
export function watchWorker(
  worker: Worker,
  label: string,
  fail: (error: TransportClosedError) => void,
): () => void {
  const terminate = worker.terminate;
  const onError = (event: ErrorEvent): void => {
    event.preventDefault();
    const cause = event.error instanceof Error ? event.error : new Error(event.message);
    fail(new TransportClosedError(`${label}: the worker failed: ${event.message}`, { cause }));
    terminate.call(worker);
  };
  const onMessageError = (): void => {
    fail(new TransportClosedError(`${label}: a message from the worker could not be read`));
  };
  const ownTerminate = function (this: Worker): void {
    terminate.call(this);
    fail(new TransportClosedError(`${label}: the worker was terminated`));
  };
  worker.terminate = ownTerminate;
  worker.addEventListener("error", onError);
  worker.addEventListener("messageerror", onMessageError);
  return () => {
    worker.removeEventListener("error", onError);
    worker.removeEventListener("messageerror", onMessageError);
    if (worker.terminate === ownTerminate) delete (worker as { terminate?: unknown }).terminate;
  };
}

/** Whether this code runs in a Web Worker (whose global scope has `postMessage` and `close`). */
export function inWorker(): boolean {
  const scope = globalThis as { postMessage?: unknown; close?: unknown };
  return typeof scope.postMessage === "function" && typeof scope.close === "function";
}

/**
 * In a worker, calls `goingAway` when the worker calls `self.close()`, before it closes: the
 * parent gets no event of that, so the transport tells its peer itself. Returns the undo (a
 * no-op outside a worker).
 */
export function watchSelfClose(goingAway: () => void): () => void {
  if (!inWorker()) return () => {};
  const scope = globalThis as unknown as { close: () => void };
  const close = scope.close;
  const ownClose = (): void => {
    goingAway();
    close.call(scope);
  };
  scope.close = ownClose;
  return () => {
    if (scope.close === ownClose) scope.close = close;
  };
}
