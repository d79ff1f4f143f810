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
