// The parent's side of a stdio transport, for `spawnTransport` and `childTransport` and for
// workers: the child's stdin and stdout as a byte channel, its stderr drained line by line
// (or left to the caller; StderrLines, below), and `close()` that waits for the child to exit.

import {
  type ByteChannel,
  ByteChannelTransport,
  PipeResizer,
  ReadBuffer,
} from "./_byte_channel_transport.ts";
import type { ChildProcessLike } from "../_spawn.ts";
import { within } from "../_runtime.ts";

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

  constructor(child: ChildProcessLike, options: ChildProcessOptions) {
    super(new ChildChannel(child, options));
    this.pid = child.pid;
    this.status = child.status;
  }
}

class ChildChannel implements ByteChannel {
  readonly label: string;
  readonly #child: ChildProcessLike;
  readonly #stdin: WritableStreamDefaultWriter<Uint8Array>;
  readonly #stdout: ReadableStreamBYOBReader;
  readonly #stderr: StderrLines | undefined;
  readonly #exitTimeout: number;
  readonly #buffer = new ReadBuffer();
  readonly #stdinResizer: PipeResizer;
  readonly #stdoutResizer: PipeResizer;

  constructor(child: ChildProcessLike, options: ChildProcessOptions) {
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

function pipedStderr(child: ChildProcessLike): ReadableStream<Uint8Array> | undefined {
  try {
    return child.stderr;
  } catch {
    // Not piped: inherited or discarded by the OS.
    return undefined;
  }
}

function kill(child: ChildProcessLike): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // It has exited already.
  }
}

async function waitForExit(child: ChildProcessLike, timeoutMs: number): Promise<void> {
  const timedOut = await within(child.status.then(() => false), timeoutMs, true);
  if (timedOut) kill(child);
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

// The one stderr line reader, for the stdio transport's parent side and for workers: it reads
// a child's stderr to its end, line by line (without the line break, "\r\n" included), hands
// each line to `onLine` and keeps the last `tailLines` (terminal colours dropped: they end up
// in error messages), and for an excerpt, when the output is longer, its first lines and the
// lines that report an error (Deno's `error: …`) before them: a failure to load is explained
// on the first line and followed by a long list (every export of a package). Reading never stops early on our side, since a full stderr pipe would block
// the child.

/** Options for {@linkcode StderrLines}. */
export interface StderrLinesOptions {
  /** Lines longer than this are handed on in pieces, so one endless line cannot grow memory. */
  maxLineChars: number;
  /**
   * How many of the last lines to keep for {@linkcode StderrLines.tail}; 0 keeps none (and no
   * {@linkcode StderrLines.excerpt}).
   */
  tailLines?: number;
  /**
   * Called with each line. If it throws, the error is reported once (`reportError`) and
   * it is not called again: the draining goes on.
   */
  onLine?: (line: string) => void;
}

// deno-lint-ignore no-control-regex
const ANSI_ESCAPE = /\x1b\[[0-9;]*[A-Za-z]/g;
/** How many of the first lines {@linkcode StderrLines.tail} keeps besides the last ones. */
const HEAD_LINES = 3;
/** How many error lines beyond the first and last lines it keeps (the latest ones). */
const ERROR_LINES = 3;
/** A line reporting an error: Deno's `error: …`, or an uncaught `TypeError: …`. */
const ERROR_LINE = /^(error|[A-Z]\w*Error)\b.*:/;

/** A line kept, and its number in the output (from 0). */
interface Kept {
  readonly index: number;
  readonly line: string;
}

/** Drains one stderr stream; see the module comment. */
export class StderrLines {
  /** Resolves once the stream has ended (or failed, or was cancelled). */
  readonly done: Promise<void>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #head: Kept[] = [];
  readonly #errors: Kept[] = [];
  readonly #tail: Kept[] = [];
  readonly #tailLines: number;
  #count = 0;
  readonly #maxLineChars: number;
  #onLine: ((line: string) => void) | undefined;

  constructor(stream: ReadableStream<Uint8Array>, options: StderrLinesOptions) {
    this.#reader = stream.getReader();
    this.#tailLines = options.tailLines ?? 0;
    this.#maxLineChars = options.maxLineChars;
    this.#onLine = options.onLine;
    this.done = this.#drain();
  }

  /** The last lines read, oldest first. */
  get tail(): string[] {
    return this.#tail.map((kept) => kept.line);
  }

  /**
   * The lines that explain how the output ended, oldest first: the last `tailLines` read and,
   * when more were read, the first ones and the latest error lines before them, with a line
   * `… (N lines left out)` where lines were left out.
   */
  get excerpt(): string[] {
    const kept = [...this.#head, ...this.#errors, ...this.#tail];
    const lines: string[] = [];
    let next = 0;
    for (const { index, line } of kept) {
      if (index < next) continue;
      if (index > next) lines.push(`… (${index - next} lines left out)`);
      lines.push(line);
      next = index + 1;
    }
    return lines;
  }

  /** Stops reading (for a grandchild that keeps the pipe open after the child exited). */
  cancel(): Promise<void> {
    return this.#reader.cancel().catch(() => {});
  }

  async #drain(): Promise<void> {
    const max = this.#maxLineChars;
    const decoder = new TextDecoder();
    let partial = "";
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done) break;
        // Nobody wants the text: only drain.
        if (this.#onLine === undefined && this.#tailLines === 0) continue;
        const text = decoder.decode(value, { stream: true });
        let start = 0;
        for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n", start)) {
          this.#line(partial + text.slice(start, end));
          partial = "";
          start = end + 1;
        }
        partial += text.slice(start);
        while (partial.length > max) {
          this.#emit(partial.slice(0, max));
          partial = partial.slice(max);
        }
      }
    } catch {
      // The pipe failed or was cancelled: keep what arrived.
    }
    partial += decoder.decode();
    if (partial.length > 0) this.#line(partial);
    this.#reader.releaseLock();
  }

  /** A whole line: without its "\r", in pieces of at most `maxLineChars`. */
  #line(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    const max = this.#maxLineChars;
    if (line.length <= max) return this.#emit(line);
    for (let start = 0; start < line.length; start += max) {
      this.#emit(line.slice(start, start + max));
    }
  }

  #emit(line: string): void {
    if (this.#tailLines > 0) {
      this.#keep({ index: this.#count++, line: line.replace(ANSI_ESCAPE, "") });
    }
    const onLine = this.#onLine;
    if (onLine === undefined) return;
    try {
      onLine(line);
    } catch (error) {
      this.#onLine = undefined;
      reportError(error);
    }
  }

  /** Keeps `kept` among the last lines; the line it pushes out, when it explains, elsewhere. */
  #keep(kept: Kept): void {
    const tail = this.#tail;
    tail.push(kept);
    if (tail.length <= this.#tailLines) return;
    const out = tail.shift()!;
    if (this.#head.length < HEAD_LINES) this.#head.push(out);
    else if (ERROR_LINE.test(out.line)) {
      if (this.#errors.length === ERROR_LINES) this.#errors.shift();
      this.#errors.push(out);
    }
  }
}
