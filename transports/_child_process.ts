// The parent's side of a stdio transport, for `spawnTransport` and `childTransport` and for
// workers: the child's stdin and stdout as a byte channel, its stderr drained line by line
// (or left to the caller), and `close()` that waits for the child to exit.

import { type ByteChannel, ByteChannelTransport, ReadBuffer } from "./_byte_channel_transport.ts";
import { PipeResizer } from "./_pipe_buffer.ts";
import { StderrLines, type StderrLinesOptions } from "./_stderr_lines.ts";

/** How the child is wrapped, all options resolved. */
export interface ChildProcessOptions {
  /** The transport's name in messages. */
  label: string;
  /** How long `close()` waits for the child to exit before `SIGKILL`, in milliseconds. */
  exitTimeout: number;
  /** The pipe buffer size to ask for once a pipe is busy; 0 never asks. */
  pipeBufferBytes: number;
  /**
   * How to read a piped stderr: line by line, or not at all when the caller reads it
   * (`"untouched"`; then nothing else drains it).
   */
  stderr: StderrLinesOptions | "untouched";
}

/** A transport to a child process over its stdin and stdout, with its `pid` and `status`. */
export class ChildProcessTransport extends ByteChannelTransport {
  readonly pid: number;
  readonly status: Promise<Deno.CommandStatus>;

  constructor(child: Deno.ChildProcess, options: ChildProcessOptions) {
    super(new ChildChannel(child, options));
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
  readonly #exitTimeout: number;
  readonly #buffer = new ReadBuffer();
  readonly #stdinResizer: PipeResizer;
  readonly #stdoutResizer: PipeResizer;

  constructor(child: Deno.ChildProcess, options: ChildProcessOptions) {
    this.label = options.label;
    this.#child = child;
    this.#exitTimeout = options.exitTimeout;
    const pipeBufferBytes = options.pipeBufferBytes;
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
    const stderr = options.stderr === "untouched" ? undefined : pipedStderr(child);
    this.#stderr = stderr && new StderrLines(stderr, options.stderr as StderrLinesOptions);
  }

  // Reads are thens, not async functions: one promise layer less per read, which a small
  // call pays once in the parent.
  read(): Promise<Uint8Array | null> {
    return this.#stdout.read(this.#buffer.buffer).then(this.#took);
  }

  readonly #took = ({ done, value }: ReadableStreamReadResult<Uint8Array>): Uint8Array | null => {
    if (!done) {
      this.#stdoutResizer.count(value.length);
      return this.#buffer.take(value);
    }
    // The read transferred the buffer: take it back for a reader that reads past the end.
    if (value) this.#buffer.restore(value);
    return null;
  };

  // The BYOB reader reads into `view` itself (transferring its ArrayBuffer), no copy.
  readInto(view: Uint8Array): Promise<Uint8Array | null> {
    if (view.length === 0) return Promise.resolve(view);
    return this.#stdout.read(view).then(this.#tookInto);
  }

  readonly #tookInto = (
    { done, value }: ReadableStreamReadResult<Uint8Array>,
  ): Uint8Array | null => {
    if (done) return null;
    this.#stdoutResizer.count(value.length);
    return value;
  };

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
    await waitForExit(child, this.#exitTimeout);
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
