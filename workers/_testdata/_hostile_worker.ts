// A hostile worker for workers/process_hostile_test.ts: its first argument, or a handler,
// says how it misbehaves.
import process from "node:process";
import { serveWorker } from "../serve_worker.ts";
import { closePipe } from "./_close_pipe.ts";

const how = Deno.args[0] ?? "";

/**
 * Starts `sleep` as a grandchild that inherits this process's stdio, and returns its pid; with
 * `guarded`, through `setpriv --pdeathsig KILL`, so that it dies with this process.
 */
function grandchild(seconds: number, guarded = false): number {
  const sleep = ["sleep", String(seconds)];
  const argv = guarded ? ["setpriv", "--pdeathsig", "KILL", "--", ...sleep] : sleep;
  const child = new Deno.Command(argv[0], {
    args: argv.slice(1),
    stdin: "inherit",
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  child.unref();
  return child.pid;
}

const handlers = {
  ping: (): string => "pong",
  pid: (): number => Deno.pid,
  /** Writes raw bytes to fd 1 (past the console's redirection), then waits. */
  raw(bytes: number[]): Promise<never> {
    process.stdout.write(new Uint8Array(bytes));
    return new Promise(() => {});
  },
  /** Writes raw bytes to fd 1, then exits. */
  rawExit(bytes: number[]): void {
    process.stdout.write(new Uint8Array(bytes), () => Deno.exit(3));
  },
  /** Never answers. */
  hang: (): Promise<never> => new Promise(() => {}),
  /** Starts a grandchild holding the pipes; answers with its pid. */
  grandchild: (seconds: number): number => grandchild(seconds),
  /** Starts a grandchild that dies with this process; answers with its pid. */
  guardedGrandchild: (seconds: number): number => grandchild(seconds, true),
  /** Starts a grandchild holding the pipes, then exits. */
  grandchildExit(seconds: number): void {
    grandchild(seconds);
    Deno.exit(5);
  },
  /** Closes every descriptor of the pipe at `fd`, and lives on. */
  closeFd(fd: number): Promise<never> {
    closePipe(fd);
    return new Promise(() => {});
  },
  /** Floods stderr with `lines` lines of `size` characters. */
  flood({ lines, size }: { lines: number; size: number }): number {
    const line = new TextEncoder().encode("x".repeat(size) + "\n");
    for (let i = 0; i < lines; i++) {
      let at = 0;
      while (at < line.length) at += Deno.stderr.writeSync(line.subarray(at));
    }
    return lines;
  },
  /** Reads its environment variable, if it may. */
  env: (name: string): string | undefined => Deno.env.get(name),
};
export type AttackApi = typeof handlers;

if (how === "idle") {
  // Loads, keeps running, never serves.
  setInterval(() => {}, 1000);
} else if (how === "never-read") {
  // Serves, but the event loop is blocked for good after the handshake.
  await serveWorker({
    ...handlers,
    block: (): never => {
      for (;;) { /* spin */ }
    },
  });
} else {
  await serveWorker(handlers);
}
