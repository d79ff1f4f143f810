// How a thread transport's parent side learns that its worker died: an uncaught error raises
// an `error` event, and terminate() raises nothing, so the instance's method is taken over.

import { TransportClosedError } from "../errors.ts";
import { exitThread } from "../_thread.ts";
import { inWorker } from "../_runtime.ts";

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
  // Bun's Worker (and Node's, through _thread.ts) says when its thread ended (`process.exit()` in it, or after an error);
  // Deno's has no such event.
  const onClose = ((event: { code?: number }): void => {
    const code = event.code;
    fail(
      new TransportClosedError(
        `${label}: the worker exited${code === undefined ? "" : ` with code ${code}`}`,
      ),
    );
  }) as unknown as EventListener;
  worker.terminate = ownTerminate;
  worker.addEventListener("error", onError);
  worker.addEventListener("messageerror", onMessageError);
  worker.addEventListener("close", onClose);
  return () => {
    worker.removeEventListener("error", onError);
    worker.removeEventListener("messageerror", onMessageError);
    worker.removeEventListener("close", onClose);
    if (worker.terminate === ownTerminate) delete (worker as { terminate?: unknown }).terminate;
  };
}

/**
 * In a worker, calls `goingAway` when the worker calls `self.close()`, before it closes: the
 * parent gets no event of that, so the transport tells its peer itself. Returns the undo (a
 * no-op outside a worker).
 */
export function watchSelfClose(goingAway: () => void): () => void {
  if (!inWorker()) return () => {};
  const scope = globalThis as unknown as { close: () => void };
  // Bun's and Node's workers have no `self.close()`: `process.exit()` ends their thread.
  const close = scope.close ?? exitThread;
  const ownClose = (): void => {
    goingAway();
    close.call(scope);
  };
  scope.close = ownClose;
  return () => {
    if (scope.close !== ownClose) return;
    if (close === exitThread) delete (scope as { close?: unknown }).close;
    else scope.close = close;
  };
}
