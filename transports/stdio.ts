/**
 * Transports over a child process's standard input and output.
 *
 * - Parent side: {@linkcode spawnTransport} spawns a program and talks to it over its
 *   stdin/stdout; {@linkcode childTransport} wraps a `Deno.ChildProcess` you spawned
 *   yourself. stderr is inherited, discarded, or handed to a callback line by line; a piped
 *   stderr is always drained, since a full pipe would block the child.
 * - Child side: {@linkcode stdioTransport} talks to the parent over `Deno.stdin` and
 *   `Deno.stdout`. While it is in use nothing else may write to stdout (no `console.log`:
 *   log to stderr with `console.error`).
 * - On Linux, with FFI permission, either side enlarges a busy pipe to 1 MiB (see
 *   {@linkcode DEFAULT_PIPE_BUFFER_BYTES}); `pipeBufferBytes: 0` turns that off.
 *
 * @example A child that echoes, driven by its parent
 * ```ts
 * import { spawnTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * // `cat` echoes stdin to stdout; a Deno child would use stdioTransport().
 * await using child = spawnTransport("cat");
 * const writer = child.writable.getWriter();
 * await writer.write(new TextEncoder().encode("hello"));
 * await writer.close(); // cat sees the end of its input, echoes, and exits
 * assert.equal(await new Response(child.readable).text(), "hello");
 * assert.equal((await child.status).code, 0);
 * ```
 *
 * @module
 */

import { type ByteChannel, ByteChannelTransport, ReadBuffer } from "./_byte_channel_transport.ts";
import { PipeResizer } from "./_pipe_buffer.ts";
import type { Transport } from "./types.ts";

/** The default {@linkcode ChildTransportOptions.exitTimeoutMs}: 2 seconds. */
export const DEFAULT_EXIT_TIMEOUT_MS = 2000;

/**
 * The default {@linkcode StdioTransportOptions.syncWriteMaxBytes}: 64 KiB, one pipe buffer.
 *
 * In a child, `await Deno.stdout.write()` runs its syscall on a worker thread while
 * `Deno.stdout.writeSync()` runs it on the main thread. Measured on a 2-core machine
 * (`bench/transport_throughput.ts`, `bench/transports_bench.ts`), synchronous small writes
 * carry 5.9M 64-byte frames/s from child to parent against 4.5M/s, and a 64-byte ping-pong
 * takes 64 µs against 75 µs. A synchronous write blocks the child's event loop while the
 * pipe is full (the parent not reading), so it is kept to what one pipe buffer holds; larger
 * chunks are written asynchronously, at the same speed.
 */
export const DEFAULT_SYNC_WRITE_MAX_BYTES: number = 64 * 1024;

/**
 * The default `pipeBufferBytes` of every stdio transport: 1 MiB, Linux's limit for an
 * unprivileged process (`/proc/sys/fs/pipe-max-size`).
 *
 * A pipe holds 64 KiB by default, exactly one of the frame writer's batches, so writer and
 * reader move each batch in lock step, with several thread wake-ups per batch. Measured on a
 * 2-core machine (`bench/stdio_notes.ts`, 64-byte notifications from parent to child), a
 * 1 MiB pipe takes the context switches per 1,000 messages from 1.2 (parent) and 1.6 (child)
 * to 0.7 and 1.0, near a Unix socket's 0.6 and 0.85; each one is a chance to wait for a CPU
 * on a busy machine. Child-to-parent bulk throughput rises 1.4-3x.
 */
export const DEFAULT_PIPE_BUFFER_BYTES: number = 1024 * 1024;

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

/** Options for {@linkcode stdioTransport}. */
export interface StdioTransportOptions {
  /**
   * Chunks up to this many bytes are written to stdout synchronously; larger ones
   * asynchronously. `0` writes everything asynchronously.
   *
   * @default {DEFAULT_SYNC_WRITE_MAX_BYTES} (65536)
   */
  syncWriteMaxBytes?: number;
  /**
   * The kernel buffer to ask for on our stdin and on our stdout, when they are pipes, in
   * bytes, once 256 KiB have crossed that pipe; `0` never asks. Linux only, and only with FFI
   * permission (`--allow-ffi` or `-A`); see {@linkcode SpawnTransportOptions.pipeBufferBytes}.
   * Either side may ask, since both processes share a pipe: a child without FFI permission
   * still gets larger pipes from a parent that has it.
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
  const pipeBufferBytes = checkPipeBufferBytes(options.pipeBufferBytes);
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

/**
 * The child's side of a stdio transport: reads from `Deno.stdin`, writes to `Deno.stdout`.
 * Use it once per process, and write nothing else to stdout while it is open. Closing it
 * closes stdin and stdout; closing its `writable` closes stdout only, so the parent's
 * `readable` ends while the parent can still write to us.
 *
 * @param options Write strategy; see {@linkcode StdioTransportOptions}.
 * @returns The transport to the parent.
 *
 * @example A Deno child that echoes to its parent
 * ```ts
 * import { spawnTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * // The child's program: echo everything until the parent closes our stdin.
 * const program = `
 *   import { stdioTransport } from "@conduit/ipc/transports/stdio";
 *   const transport = stdioTransport();
 *   await transport.readable.pipeTo(transport.writable);
 *   await transport.close();
 * `;
 * await using child = spawnTransport(Deno.execPath(), { args: ["eval", program] });
 * const writer = child.writable.getWriter();
 * await writer.write(new TextEncoder().encode("ping"));
 * await writer.close();
 * assert.equal(await new Response(child.readable).text(), "ping");
 * ```
 */
export function stdioTransport(options: StdioTransportOptions = {}): Transport {
  const syncWriteMaxBytes = options.syncWriteMaxBytes ?? DEFAULT_SYNC_WRITE_MAX_BYTES;
  if (!(syncWriteMaxBytes >= 0)) {
    throw new RangeError(`syncWriteMaxBytes must be a number >= 0, got ${syncWriteMaxBytes}`);
  }
  const pipeBufferBytes = checkPipeBufferBytes(options.pipeBufferBytes);
  return new ByteChannelTransport(new StdioChannel(syncWriteMaxBytes, pipeBufferBytes));
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
  readonly #stderr: ReadableStreamDefaultReader<Uint8Array> | undefined;
  readonly #stderrDrained: Promise<void>;
  readonly #exitTimeoutMs: number;
  readonly #buffer = new ReadBuffer();
  readonly #stdinResizer: PipeResizer;
  readonly #stdoutResizer: PipeResizer;

  constructor(child: Deno.ChildProcess, label: string, options: ChildTransportOptions) {
    this.label = label;
    this.#child = child;
    this.#exitTimeoutMs = options.exitTimeoutMs ?? DEFAULT_EXIT_TIMEOUT_MS;
    const pipeBufferBytes = checkPipeBufferBytes(options.pipeBufferBytes);
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
    this.#stderr = pipedStderr(child)?.getReader();
    this.#stderrDrained = this.#stderr
      ? drainStderr(this.#stderr, options.stderr ?? "discard")
      : Promise.resolve();
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
    await this.#stderr?.cancel().catch(() => {});
    await Promise.all([drained, this.#stderrDrained]);
  }
}

class StdioChannel implements ByteChannel {
  readonly label = "this process's stdio";
  readonly #syncWriteMaxBytes: number;
  readonly #buffer = new ReadBuffer();
  readonly #stdinResizer: PipeResizer;
  readonly #stdoutResizer: PipeResizer;

  constructor(syncWriteMaxBytes: number, pipeBufferBytes: number) {
    this.#syncWriteMaxBytes = syncWriteMaxBytes;
    this.#stdinResizer = new PipeResizer(0, pipeBufferBytes);
    this.#stdoutResizer = new PipeResizer(1, pipeBufferBytes);
  }

  async read(): Promise<Uint8Array | null> {
    const buffer = this.#buffer.buffer;
    const n = await Deno.stdin.read(buffer);
    if (n === null) return null;
    this.#stdinResizer.count(n);
    return this.#buffer.take(buffer.subarray(0, n));
  }

  async readInto(view: Uint8Array): Promise<Uint8Array | null> {
    const n = await Deno.stdin.read(view);
    if (n === null) return null;
    this.#stdinResizer.count(n);
    return view.subarray(0, n);
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    this.#stdoutResizer.count(chunk.length);
    if (chunk.length > this.#syncWriteMaxBytes) return writeAllAsync(chunk);
    let written = Deno.stdout.writeSync(chunk);
    while (written < chunk.length) written += Deno.stdout.writeSync(chunk.subarray(written));
    return undefined;
  }

  closeWrite(): Promise<void> {
    closeQuietly(Deno.stdout);
    return Promise.resolve();
  }

  close(): Promise<void> {
    // Closing stdin also settles a pending read (with Interrupted), so the process can exit.
    closeQuietly(Deno.stdin);
    closeQuietly(Deno.stdout);
    return Promise.resolve();
  }
}

async function writeAllAsync(chunk: Uint8Array): Promise<void> {
  let written = await Deno.stdout.write(chunk);
  while (written < chunk.length) written += await Deno.stdout.write(chunk.subarray(written));
}

function checkPipeBufferBytes(bytes: number | undefined): number {
  bytes ??= DEFAULT_PIPE_BUFFER_BYTES;
  if (!Number.isSafeInteger(bytes) || bytes < 0) {
    throw new RangeError(`pipeBufferBytes must be an integer >= 0, got ${bytes}`);
  }
  return bytes;
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // Closed already.
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

async function drainStderr(
  reader: ReadableStreamDefaultReader<Uint8Array>,
  handling: "discard" | ((line: string) => void),
): Promise<void> {
  let onLine = typeof handling === "function" ? handling : undefined;
  const emit = (line: string) => {
    for (let start = 0; onLine !== undefined; start += MAX_STDERR_LINE_CHARS) {
      try {
        onLine(line.slice(start, start + MAX_STDERR_LINE_CHARS));
      } catch (error) {
        onLine = undefined;
        reportError(error);
      }
      if (start + MAX_STDERR_LINE_CHARS >= line.length) return;
    }
  };
  const decoder = new TextDecoder();
  let partial = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (onLine === undefined) continue;
      const text = decoder.decode(value, { stream: true });
      let start = 0;
      for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n", start)) {
        emit(stripCr(partial + text.slice(start, end)));
        partial = "";
        start = end + 1;
      }
      partial += text.slice(start);
      while (partial.length > MAX_STDERR_LINE_CHARS) {
        emit(partial.slice(0, MAX_STDERR_LINE_CHARS));
        partial = partial.slice(MAX_STDERR_LINE_CHARS);
      }
    }
  } catch {
    // The pipe failed: report what arrived.
  }
  partial += decoder.decode();
  if (partial.length > 0) emit(stripCr(partial));
}

function stripCr(line: string): string {
  return line.endsWith("\r") ? line.slice(0, -1) : line;
}
