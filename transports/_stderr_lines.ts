// The one stderr line reader, for the stdio transport's parent side and for workers: it reads
// a child's stderr to its end, line by line (without the line break, "\r\n" included), hands
// each line to `onLine` and keeps the last `tailLines` (terminal colours dropped: the tail ends
// up in error messages). Reading never stops early on our side, since a full stderr pipe
// would block the child.

/** Options for {@linkcode StderrLines}. */
export interface StderrLinesOptions {
  /** Lines longer than this are handed on in pieces, so one endless line cannot grow memory. */
  maxLineChars: number;
  /** How many of the last lines to keep for {@linkcode StderrLines.tail}; 0 keeps none. */
  tailLines?: number;
  /**
   * Called with each line. If it throws, the error is reported once (`reportError`) and
   * it is not called again: the draining goes on.
   */
  onLine?: (line: string) => void;
}

// deno-lint-ignore no-control-regex
const ANSI_ESCAPE = /\x1b\[[0-9;]*[A-Za-z]/g;

/** Drains one stderr stream; see the module comment. */
export class StderrLines {
  /** Resolves once the stream has ended (or failed, or was cancelled). */
  readonly done: Promise<void>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #tail: string[] = [];
  readonly #tailLines: number;
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
    return this.#tail.slice();
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
      if (this.#tail.length === this.#tailLines) this.#tail.shift();
      this.#tail.push(line.replace(ANSI_ESCAPE, ""));
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
}
