// While any worker lives, SIGINT, SIGTERM and SIGHUP sent to this process first kill every
// worker, then take their default effect (the listeners are removed and the signal raised
// again). Workers also exit by themselves when their stdin ends, which covers SIGKILL of the
// parent; this covers workers too busy to notice. The listeners exist only while a worker
// does, so a program (or a test) without workers keeps no signal resource open.

const SIGNALS: readonly Deno.Signal[] = Deno.build.os === "windows"
  ? ["SIGINT"]
  : ["SIGINT", "SIGTERM", "SIGHUP"];

/** Something to kill when the parent is interrupted. */
export interface Killable {
  kill(signal: Deno.Signal): void;
}

const live = new Set<Killable>();
const listeners = new Map<Deno.Signal, () => void>();

/** Guards `worker` until the returned function is called. */
export function guardWorker(worker: Killable): () => void {
  live.add(worker);
  if (listeners.size === 0) install();
  return () => {
    if (!live.delete(worker)) return;
    if (live.size === 0) uninstall();
  };
}

function install(): void {
  for (const signal of SIGNALS) {
    const listener = () => onSignal(signal);
    try {
      Deno.addSignalListener(signal, listener);
      listeners.set(signal, listener);
    } catch {
      // Not supported here (or not permitted): stdin EOF still ends the workers.
    }
  }
}

function uninstall(): void {
  for (const [signal, listener] of listeners) Deno.removeSignalListener(signal, listener);
  listeners.clear();
}

function onSignal(signal: Deno.Signal): void {
  for (const worker of live) {
    try {
      worker.kill("SIGKILL");
    } catch {
      // Exited already.
    }
  }
  live.clear();
  uninstall();
  // Our listener suppressed the signal's default effect: let it happen now.
  Deno.kill(Deno.pid, signal);
}
