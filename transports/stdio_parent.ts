/**
 * The parent's side of a stdio transport: {@linkcode spawnTransport} spawns a program and
 * talks to it over its stdin/stdout; {@linkcode childTransport} wraps a `Deno.ChildProcess`
 * you spawned yourself. Re-exported by `@conduit/ipc/transports/stdio`.
 *
 * @module
 */

import { integerOption } from "../_options.ts";
import { type ByteChannel, ByteChannelTransport, ReadBuffer } from "./_byte_channel_transport.ts";
import { PipeResizer } from "./_pipe_buffer.ts";
import { StderrLines } from "./_stderr_lines.ts";
import { DEFAULT_PIPE_BUFFER_BYTES } from "./stdio_child.ts";
import type { Transport } from "./types.ts";

/** The default {@linkcode ChildTransportOptions.exitTimeoutMs}: 2 seconds. */
export const DEFAULT_EXIT_TIMEOUT_MS = 2000;
/** The longest stderr line handed to a callback; a longer one is split: 64 KiB. */
export const MAX_STDERR_LINE_CHARS: number = 64 * 1024;

/**
 * What to do with a child's stderr: pass it through to ours (`"inherit"`), drop it
 * (`"discard"`), or call a function with each line (without its line break).
 */
export type StderrHandling = "inherit" | "discard" | ((line: string) => void);

/** Options for {@linkcode childTransport}. */
export interface ChildTransportOptions {
  /**
   * What to do with the child's stderr when it is piped. Either way it is read to its end,
   * so the child never blocks on it. A callback must not throw; if it does, the error is
   * reported like an uncaught exception (`reportError`) and stderr is drained silently from
   * then on.
   *
   * @default {"discard"}
   */
  stderr?: "discard" | ((line: string) => void);
  /**
   * How long `close()` waits for the child to exit after closing its stdin, in milliseconds,
   * before killing it with `SIGKILL`.
   *
   * @default {DEFAULT_EXIT_TIMEOUT_MS} (2000)
   */
  exitTimeoutMs?: number;
  /**
   * The kernel buffer to ask for on the child's stdin and on its stdout, in bytes, once
   * 256 KiB have crossed that pipe (so a quiet transport keeps the default and costs
   * nothing); `0` never asks. Linux only, and only when this process has FFI permission
   * (`--allow-ffi` or `-A`), as Deno has no API for it: it is done through libc, never with a
   * prompt; otherwise the pipes keep the OS default (64 KiB). The kernel may refuse: past
   * `/proc/sys/fs/pipe-max-size`, or past the user's pipe budget
   * (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default, shared by every pipe of the
   * user), which a host with dozens of busy children can reach; set it lower there.
   *
   * @default {DEFAULT_PIPE_BUFFER_BYTES} (1 MiB)
   */
  pipeBufferBytes?: number;
}

/** Options for {@linkcode spawnTransport}. */
export interface SpawnTransportOptions {
  /**
   * Arguments for the program.
   *
   * @default {[]}
   */
  args?: string[];
  /**
   * The working directory of the child.
   *
   * @default {undefined} (ours)
   */
  cwd?: string | URL;
  /**
   * Environment variables to set for the child, on top of ours unless `clearEnv`.
   *
   * @default {undefined}
   */
  env?: Record<string, string>;
  /**
   * Start the child with only the variables in `env`.
   *
   * @default {false}
   */
  clearEnv?: boolean;
  /**
   * What to do with the child's stderr; see {@linkcode StderrHandling}.
   *
   * @default {"inherit"}
   */
  stderr?: StderrHandling;
  /**
   * How long `close()` waits for the child to exit after closing its stdin, in milliseconds,
   * before killing it with `SIGKILL`.
   *
   * @default {DEFAULT_EXIT_TIMEOUT_MS} (2000)
   */
  exitTimeoutMs?: number;
  /**
   * The kernel buffer to ask for on the child's stdin and on its stdout, in bytes, once
   * 256 KiB have crossed that pipe (so a quiet transport keeps the default and costs
   * nothing); `0` never asks. Linux only, and only when this process has FFI permission
   * (`--allow-ffi` or `-A`), as Deno has no API for it: it is done through libc, never with a
   * prompt; otherwise the pipes keep the OS default (64 KiB). The kernel may refuse: past
   * `/proc/sys/fs/pipe-max-size`, or past the user's pipe budget
   * (`/proc/sys/fs/pipe-user-pages-soft`, 64 MiB by default, shared by every pipe of the
   * user), which a host with dozens of busy children can reach; set it lower there.
   *
   * @default {DEFAULT_PIPE_BUFFER_BYTES} (1 MiB)
   */
  pipeBufferBytes?: number;
}

/**
 * A transport to a child process: its `writable` feeds the child's stdin, its `readable`
 * carries the child's stdout.
 *
 * `close()` flushes, closes the child's stdin, drains its stdout until it exits (killing it
 * with `SIGKILL` after `exitTimeoutMs`), and resolves once it has exited and every pipe is
 * closed. `abort()` kills the child with `SIGKILL` at once. Closing `writable` only closes
 * the child's stdin, so its remaining output can still be read.
 */
export interface ChildTransport extends Transport {
  /** The child's process id. */
  readonly pid: number;
  /** Resolves with the child's exit status once it has exited. */
  readonly status: Promise<Deno.CommandStatus>;
}

/**
 * Spawns `command` with piped stdin and stdout and returns a transport to it.
 *
 * @param command The program to run (looked up in `PATH` unless it is a path).
 * @param options Arguments, environment, stderr handling; see
 * {@linkcode SpawnTransportOptions}.
 * @returns The transport, with the child's `pid` and `status`.
 * @throws {Deno.errors.NotFound} When the program does not exist.
 *
 * @example
 * ```ts
 * import { spawnTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * const lines: string[] = [];
 * const child = spawnTransport(Deno.execPath(), {
 *   args: ["eval", "console.error('starting'); await Deno.stdin.readable.pipeTo(Deno.stdout.writable)"],
 *   stderr: (line) => lines.push(line),
 * });
 * const writer = child.writable.getWriter();
 * await writer.write(new Uint8Array([1, 2, 3]));
 * const { value } = await child.readable.getReader().read();
 * assert.deepEqual(value, new Uint8Array([1, 2, 3]));
 * writer.releaseLock();
 * await child.close();
 * assert.deepEqual(lines, ["starting"]);
 * assert.equal((await child.status).success, true);
 * ```
 */
export function spawnTransport(
  command: string | URL,
  options: SpawnTransportOptions = {},
): ChildTransport {
  const stderr = options.stderr ?? "inherit";
  const pipeBufferBytes = pipeBufferBytesOption(options);
  const child = new Deno.Command(command, {
    args: options.args,
    cwd: options.cwd,
    env: options.env,
    clearEnv: options.clearEnv,
    stdin: "piped",
    stdout: "piped",
    stderr: stderr === "inherit" ? "inherit" : stderr === "discard" ? "null" : "piped",
  }).spawn();
  return new ChildProcessTransport(
    new ChildChannel(child, `child process ${child.pid} (${command})`, {
      stderr: typeof stderr === "function" ? stderr : "discard",
      exitTimeoutMs: options.exitTimeoutMs,
      pipeBufferBytes,
    }),
    child,
  );
}

/**
 * Wraps a child process spawned with `stdin: "piped"` and `stdout: "piped"` in a transport.
 * The transport owns the child's pipes from now on; if its stderr is piped too, it is
 * drained as `options.stderr` says.
 *
 * @param child The child process.
 * @param options stderr handling and exit timeout; see {@linkcode ChildTransportOptions}.
 * @returns The transport, with the child's `pid` and `status`.
 * @throws {TypeError} When the child's stdin or stdout is not piped.
 *
 * @example
 * ```ts
 * import { childTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * const child = new Deno.Command("cat", { stdin: "piped", stdout: "piped" }).spawn();
 * await using transport = childTransport(child);
 * const writer = transport.writable.getWriter();
 * await writer.write(new Uint8Array([42]));
 * await writer.close();
 * assert.deepEqual(await Array.fromAsync(transport.readable), [new Uint8Array([42])]);
 * assert.equal(transport.pid, child.pid);
 * ```
 */
export function childTransport(
  child: Deno.ChildProcess,
  options: ChildTransportOptions = {},
): ChildTransport {
  return new ChildProcessTransport(
    new ChildChannel(child, `child process ${child.pid}`, options),
    child,
  );
}

class ChildProcessTransport extends ByteChannelTransport implements ChildTransport {
  readonly pid: number;
  readonly status: Promise<Deno.CommandStatus>;

  constructor(channel: ByteChannel, child: Deno.ChildProcess) {
    super(channel);
    this.pid = child.pid;
    this.status = child.status;
  }
}

class ChildChannel implements ByteChannel {
  readonly label: string;
  readonly #child: Deno.ChildProcess;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #stdout: ReadableStreamBYOBReader;
  readonly #stderr: StderrLines | undefined;
  readonly #exitTimeoutMs: number;
  readonly #buffer = new ReadBuffer();
  readonly #stdinResizer: PipeResizer;
  readonly #stdoutResizer: PipeResizer;

  constructor(child: Deno.ChildProcess, label: string, options: ChildTransportOptions) {
    this.label = label;
    this.#child = child;
    this.#exitTimeoutMs = options.exitTimeoutMs ?? DEFAULT_EXIT_TIMEOUT_MS;
    const pipeBufferBytes = pipeBufferBytesOption(options);
    this.#stdinResizer = new PipeResizer(`/proc/${child.pid}/fd/0`, pipeBufferBytes);
    this.#stdoutResizer = new PipeResizer(`/proc/${child.pid}/fd/1`, pipeBufferBytes);
    // Once the child is reaped its pid, and so its /proc path, may name another process.
    child.status.finally(() => {
      this.#stdinResizer.cancel();
      this.#stdoutResizer.cancel();
    }).catch(() => {});
    this.#stdin = child.stdin.getWriter();
    this.#stdin.closed.catch(() => {});
    this.#stdout = child.stdout.getReader({ mode: "byob" });
    const stderr = pipedStderr(child);
    const onLine = typeof options.stderr === "function" ? options.stderr : undefined;
    this.#stderr = stderr &&
      new StderrLines(stderr, { maxLineChars: MAX_STDERR_LINE_CHARS, onLine });
  }

  async read(): Promise<Uint8Array | null> {
    const { done, value } = await this.#stdout.read(this.#buffer.buffer);
    if (!done) {
      this.#stdoutResizer.count(value.length);
      return this.#buffer.take(value);
    }
    // The read transferred the buffer: take it back for a reader that reads past the end.
    if (value) this.#buffer.buffer = new Uint8Array(value.buffer);
    return null;
  }

  // The BYOB reader reads into `view` itself (transferring its ArrayBuffer), no copy.
  async readInto(view: Uint8Array): Promise<Uint8Array | null> {
    if (view.length === 0) return view;
    const { done, value } = await this.#stdout.read(view);
    if (done) return null;
    this.#stdoutResizer.count(value.length);
    return value;
  }

  write(chunk: Uint8Array): Promise<void> {
    this.#stdinResizer.count(chunk.length);
    return this.#stdin.write(chunk);
  }

  closeWrite(): Promise<void> {
    return this.#stdin.close();
  }

  async close(abortive: boolean): Promise<void> {
    const child = this.#child;
    if (abortive) {
      kill(child);
      void this.#stdin.abort().catch(() => {});
    } else {
      void this.#stdin.close().catch(() => this.#stdin.abort().catch(() => {}));
    }
    // Drain stdout meanwhile: a child blocked on a full pipe could never exit.
    const drained = drain(this.#stdout);
    await waitForExit(child, this.#exitTimeoutMs);
    // A grandchild may hold the pipes open after the child exited: stop reading them.
    await this.#stdout.cancel().catch(() => {});
    await this.#stderr?.cancel();
    await Promise.all([drained, this.#stderr?.done]);
  }
}

function pipedStderr(child: Deno.ChildProcess): ReadableStream<Uint8Array> | undefined {
  try {
    return child.stderr;
  } catch {
    // Not piped: inherited or discarded by the OS.
    return undefined;
  }
}

function kill(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // It has exited already.
  }
}

async function waitForExit(child: Deno.ChildProcess, timeoutMs: number): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), timeoutMs);
  });
  try {
    if (await Promise.race([child.status.then(() => false), timedOut])) kill(child);
  } finally {
    clearTimeout(timer);
  }
  await child.status;
}

async function drain(reader: ReadableStreamBYOBReader): Promise<void> {
  let buffer = new Uint8Array(64 * 1024);
  try {
    for (;;) {
      const { done, value } = await reader.read(buffer);
      if (done) return;
      buffer = new Uint8Array(value.buffer);
    }
  } catch {
    // The pipe failed: there is nothing left to drain.
  }
}

function pipeBufferBytesOption(options: { pipeBufferBytes?: number }): number {
  return integerOption("pipeBufferBytes", options.pipeBufferBytes ?? DEFAULT_PIPE_BUFFER_BYTES, 0);
}
