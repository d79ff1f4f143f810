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
