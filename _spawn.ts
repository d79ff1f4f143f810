// Child processes on every runtime, the runtime seam's part beside _runtime.ts: Deno's
// `Deno.Command` on Deno, `node:child_process` elsewhere, behind the part of
// `Deno.ChildProcess` that the stdio transport and workers use.
// Off Deno the child's pipes become Web Streams here: stdout and stderr as byte streams (so
// that a BYOB reader reads into its own buffer, as on Deno), stdin as a writable whose writes
// settle once the runtime has the bytes. Statuses read as Deno's: a child killed by a signal
// has `signal` set and `code` 128 + its number.

import type { ChildProcess, SpawnOptions as NodeSpawnOptions } from "node:child_process";
import type { Readable, Writable } from "node:stream";
import { nodeBuiltin, onDeno } from "./_runtime.ts";

/** The part of `Deno.ChildProcess` conduit uses. */
export interface ChildProcessLike {
  readonly pid: number;
  /** Throws when not piped, as the streams below. */
  readonly stdin: WritableStream<Uint8Array>;
  readonly stdout: ReadableStream<Uint8Array<ArrayBuffer>>;
  readonly stderr: ReadableStream<Uint8Array<ArrayBuffer>>;
  readonly status: Promise<Deno.CommandStatus>;
  /** Throws when the child has exited. */
  kill(signal?: Deno.Signal): void;
  ref(): void;
  unref(): void;
}

/** How to spawn: the subset of `Deno.CommandOptions` conduit passes. */
export interface SpawnOptions {
  args?: readonly string[];
  cwd?: string | URL;
  env?: Record<string, string>;
  clearEnv?: boolean;
  stdin?: "piped" | "inherit" | "null";
  stdout?: "piped" | "inherit" | "null";
  stderr?: "piped" | "inherit" | "null";
}

/** A child that could not be started because its program does not exist (`ENOENT`). */
export function isNotFound(error: unknown): boolean {
  if (onDeno()) return error instanceof Deno.errors.NotFound;
  return (error as { code?: unknown })?.code === "ENOENT";
}

/** A child that could not be started because this process may not run it. */
export function isNotAllowed(error: unknown): boolean {
  if (onDeno()) return error instanceof Deno.errors.NotCapable;
  const code = (error as { code?: unknown })?.code;
  return code === "EACCES" || code === "ERR_ACCESS_DENIED";
}

/**
 * Starts `command`. Throws at once when it cannot start: `Deno.errors.NotFound` on Deno, an
 * `Error` with `code` `"ENOENT"` (or `"EACCES"`) elsewhere.
 */
export function spawnChild(command: string | URL, options: SpawnOptions): ChildProcessLike {
  if (onDeno()) {
    const { args, ...rest } = options;
    return new Deno.Command(command, { ...rest, args: args && [...args] }).spawn();
  }
  return NodeChild.spawn(command, options);
}

/**
 * `child` as conduit uses it: a `Deno.ChildProcess` as it is, a `node:child_process` child
 * wrapped (its piped stdio then belongs to the wrapper).
 */
export function adoptChild(child: Deno.ChildProcess | NodeChildProcess): ChildProcessLike {
  return "status" in child ? child : new NodeChild(child);
}

/** The OS's signal numbers, by name (`node:os`'s, loaded without an import). */
function signalNumbers(): Record<string, number | undefined> {
  return nodeBuiltin<{ constants: { signals: Record<string, number> } }>("node:os").constants
    .signals;
}

/** Node's `child_process` module, loaded without an import (this module loads on Deno). */
interface ChildProcessModule {
  spawn(command: string, args: readonly string[], options: NodeSpawnOptions): ChildProcess;
}

/**
 * A `node:child_process` child (for `childTransport` on Node and Bun).
 *
 * @example
 * ```ts ignore
 * import { spawn } from "node:child_process";
 * import { childTransport } from "@conduit/ipc/transports/stdio";
 *
 * const transport = childTransport(spawn("cat", { stdio: ["pipe", "pipe", "inherit"] }));
 * ```
 */
export type NodeChildProcess = ChildProcess;

/** A `node:child_process` child as Deno's `ChildProcess`. */
class NodeChild implements ChildProcessLike {
  readonly pid: number;
  readonly status: Promise<Deno.CommandStatus>;
  readonly #child: NodeChildProcess;
  readonly #stdin: WritableStream<Uint8Array> | undefined;
  readonly #stdout: ReadableStream<Uint8Array> | undefined;
  readonly #stderr: ReadableStream<Uint8Array> | undefined;

  constructor(child: NodeChildProcess) {
    // An error after the start (a write to a closed pipe, a failed kill) surfaces where it is
    // used; an unhandled "error" event would end this process.
    child.on("error", () => {});
    this.#child = child;
    this.pid = child.pid!;
    this.status = new Promise((resolve) => {
      const exited = (code: number | null, signal: string | null) => {
        const number = signal === null ? undefined : signalNumbers()[signal];
        resolve({
          success: code === 0,
          code: code ?? (number === undefined ? 1 : 128 + number),
          signal: signal as Deno.Signal | null,
        });
      };
      // A child adopted after its exit has reported it already.
      if (child.exitCode !== null || child.signalCode !== null) {
        exited(child.exitCode, child.signalCode);
      } else child.once("exit", exited);
    });
    this.#stdin = child.stdin ? writableOf(child.stdin) : undefined;
    this.#stdout = child.stdout ? byteStreamOf(child.stdout) : undefined;
    this.#stderr = child.stderr ? byteStreamOf(child.stderr) : undefined;
  }

  /** Spawns `command` through `node:child_process`; throws when it cannot start. */
  static spawn(command: string | URL, options: SpawnOptions): NodeChild {
    const { spawn } = nodeBuiltin<ChildProcessModule>("node:child_process");
    const parentEnv = (globalThis as unknown as { process: { env: Record<string, string> } })
      .process.env;
    const io = (how: SpawnOptions["stdin"]) =>
      how === "piped" ? "pipe" : how === "null" ? "ignore" : "inherit";
    const program = command instanceof URL ? decodeURIComponent(command.pathname) : command;
    const child = spawn(program, options.args ?? [], {
      cwd: options.cwd instanceof URL ? decodeURIComponent(options.cwd.pathname) : options.cwd,
      env: options.clearEnv ? { ...options.env } : { ...parentEnv, ...options.env },
      stdio: [
        io(options.stdin ?? "inherit"),
        io(options.stdout ?? "inherit"),
        io(options.stderr ?? "inherit"),
      ],
    });
    if (child.pid === undefined) {
      // Node reports the reason a tick later; the child never started.
      const reason = Promise.withResolvers<Error>();
      child.once("error", reason.resolve);
      throw Object.assign(
        new Error(`Could not start ${program}: not found or not executable`),
        { code: "ENOENT", reason: reason.promise },
      );
    }
    return new NodeChild(child);
  }

  get stdin(): WritableStream<Uint8Array> {
    if (this.#stdin === undefined) throw new TypeError("stdin is not piped");
    return this.#stdin;
  }

  get stdout(): ReadableStream<Uint8Array<ArrayBuffer>> {
    if (this.#stdout === undefined) throw new TypeError("stdout is not piped");
    return this.#stdout as ReadableStream<Uint8Array<ArrayBuffer>>;
  }

  get stderr(): ReadableStream<Uint8Array<ArrayBuffer>> {
    if (this.#stderr === undefined) throw new TypeError("stderr is not piped");
    return this.#stderr as ReadableStream<Uint8Array<ArrayBuffer>>;
  }

  kill(signal: Deno.Signal = "SIGTERM"): void {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) {
      throw new TypeError("Child process has already terminated");
    }
    this.#child.kill(signal as NodeJS.Signals);
  }

  ref(): void {
    this.#child.ref();
    for (const pipe of this.#pipes()) pipe.ref?.();
  }

  unref(): void {
    this.#child.unref();
    for (const pipe of this.#pipes()) pipe.unref?.();
  }

  #pipes(): { ref?(): void; unref?(): void }[] {
    const { stdin, stdout, stderr } = this.#child;
    return [stdin, stdout, stderr].filter((pipe) => pipe !== null) as {
      ref?(): void;
      unref?(): void;
    }[];
  }
}

/** How many bytes a pipe reads ahead of its reader before it is paused. */
const READ_AHEAD_BYTES = 256 * 1024;

/** A Node readable as a byte stream, paused while its reader is behind. */
function byteStreamOf(stream: Readable): ReadableStream<Uint8Array> {
  let ended = false;
  return new ReadableStream({
    type: "bytes",
    start(controller) {
      stream.on("data", (data: Uint8Array) => {
        if (ended) return;
        // A copy: enqueueing transfers the chunk's memory, which Node may share between chunks.
        controller.enqueue(Uint8Array.prototype.slice.call(data));
        if ((controller.desiredSize ?? 0) <= 0) stream.pause();
      });
      const end = () => {
        if (ended) return;
        ended = true;
        controller.close();
        controller.byobRequest?.respond(0);
      };
      stream.once("end", end);
      stream.once("close", end);
      stream.once("error", (error: Error) => {
        if (ended) return;
        ended = true;
        controller.error(error);
      });
    },
    pull() {
      if (stream.isPaused()) stream.resume();
    },
    cancel() {
      ended = true;
      stream.destroy();
    },
  }, { highWaterMark: READ_AHEAD_BYTES });
}

/** A Node writable as a WritableStream whose writes settle once the runtime has the bytes. */
function writableOf(stream: Writable): WritableStream<Uint8Array> {
  let failure: Error | undefined;
  stream.on("error", (error: Error) => failure ??= error);
  return new WritableStream({
    write(chunk) {
      if (failure !== undefined) return Promise.reject(failure);
      return new Promise((resolve, reject) =>
        stream.write(chunk, (error) => error ? reject(error) : resolve())
      );
    },
    close() {
      // Settled however the pipe ends: Bun calls no end() callback for a pipe whose reader
      // (the child) has exited, it reports an error or a close instead.
      if (stream.destroyed || stream.writableFinished) return Promise.resolve();
      return new Promise<void>((resolve) => {
        stream.once("error", () => resolve());
        stream.once("close", () => resolve());
        stream.end(() => resolve());
      });
    },
    abort() {
      stream.destroy();
    },
  });
}
