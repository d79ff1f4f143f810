// Workers never outlive this process, without pre-empting its own signal handling:
//
// - On Linux, each worker module is started through util-linux `setpriv --pdeathsig KILL`, so the
//   kernel kills it the moment this process dies, however it dies (SIGKILL included) and
//   however busy the worker is. Without `setpriv` (or where `--allow-run` does not allow it)
//   workers are started directly.
// - When this process exits (`Deno.exit()`, the end of the program, or an exit from the
//   application's own signal handler) every worker still running is killed in the `unload`
//   event, on every OS.
// - Otherwise (no `setpriv`, macOS, Windows, or a `WorkerCommand`, and this process killed by
//   a signal) a worker exits when it next reads its stdin and finds it closed: at once when idle, once
//   its synchronous work returns when busy.
//
// conduit installs no signal listener: an application that handles SIGINT or SIGTERM runs its
// handler once, and its workers keep serving during its graceful shutdown.

/** Something to kill when this process exits. */
export interface Killable {
  kill(signal: Deno.Signal): void;
}

const live = new Set<Killable>();
/** Whether `setpriv --pdeathsig` works here: unknown until the first spawn tries it. */
let pdeathsig: boolean | undefined = Deno.build.os === "linux" ? undefined : false;

/** Kills `worker` when this process exits, until the returned function is called. */
export function killAtExit(worker: Killable): () => void {
  live.add(worker);
  if (live.size === 1) globalThis.addEventListener("unload", killAll);
  return () => {
    if (live.delete(worker) && live.size === 0) {
      globalThis.removeEventListener("unload", killAll);
    }
  };
}

/**
 * Spawns `command`; with `parentDeath`, through `setpriv --pdeathsig KILL` where that works
 * (see the module comment). Only for programs known to exist (the Deno executable): a
 * missing one would otherwise fail inside setpriv instead of with `NotFound` here.
 */
export function spawnProcess(
  command: string | URL,
  options: Deno.CommandOptions,
  parentDeath: boolean,
): Deno.ChildProcess {
  return parentDeath
    ? spawnWithParentDeath(command, options)
    : new Deno.Command(command, options).spawn();
}

function spawnWithParentDeath(
  command: string | URL,
  options: Deno.CommandOptions,
): Deno.ChildProcess {
  if (pdeathsig !== false) {
    const program = command instanceof URL ? command.pathname : command;
    try {
      const child = new Deno.Command("setpriv", {
        ...options,
        args: ["--pdeathsig", "KILL", "--", program, ...(options.args ?? [])],
      }).spawn();
      pdeathsig = true;
      return child;
    } catch (error) {
      // No setpriv here, or not one this process may run: start workers directly.
      if (!(error instanceof Deno.errors.NotFound || error instanceof Deno.errors.NotCapable)) {
        throw error;
      }
      pdeathsig = false;
    }
  }
  return new Deno.Command(command, options).spawn();
}

function killAll(): void {
  for (const worker of live) {
    try {
      worker.kill("SIGKILL");
    } catch {
      // Exited already.
    }
  }
  live.clear();
}
