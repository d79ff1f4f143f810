// Reads a worker's stderr to its end, line by line: each line goes to `onLine`, and the last
// `tailLines` are kept for WorkerExitedError. Reading never stops early on our side, since a
// full stderr pipe would block the worker.

/** Lines longer than this are split, so one endless line cannot grow memory. */
const MAX_LINE_CHARS = 8 * 1024;

// deno-lint-ignore no-control-regex
const ANSI_ESCAPE = /\x1b\[[0-9;]*[A-Za-z]/g;

/** Drains one stderr stream; see the module comment. */
export class StderrLines {
  /** Resolves once the stream has ended (or failed, or was cancelled). */
  readonly done: Promise<void>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #tail: string[] = [];
  readonly #tailLines: number;
  #onLine: ((line: string) => void) | undefined;

  constructor(
    stream: ReadableStream<Uint8Array>,
    tailLines: number,
    onLine: ((line: string) => void) | undefined,
  ) {
    this.#reader = stream.getReader();
    this.#tailLines = tailLines;
    this.#onLine = onLine;
    this.done = this.#drain();
  }

  /** The last lines read, oldest first. */
  get tail(): string[] {
    return this.#tail.slice();
  }

  /** Stops reading (for a grandchild that keeps the pipe open after the worker exited). */
  cancel(): Promise<void> {
    return this.#reader.cancel().catch(() => {});
  }

  async #drain(): Promise<void> {
    const decoder = new TextDecoder();
    let partial = "";
    try {
      for (;;) {
        const { done, value } = await this.#reader.read();
        if (done) break;
        const text = decoder.decode(value, { stream: true });
        let start = 0;
        for (let end = text.indexOf("\n"); end >= 0; end = text.indexOf("\n", start)) {
          this.#emit(partial + text.slice(start, end));
          partial = "";
          start = end + 1;
        }
        partial += text.slice(start);
        while (partial.length > MAX_LINE_CHARS) {
          this.#emit(partial.slice(0, MAX_LINE_CHARS));
          partial = partial.slice(MAX_LINE_CHARS);
        }
      }
    } catch {
      // The pipe failed or was cancelled: keep what arrived.
    }
    partial += decoder.decode();
    if (partial.length > 0) this.#emit(partial);
    this.#reader.releaseLock();
  }

  #emit(raw: string): void {
    const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
    if (this.#tailLines > 0) {
      if (this.#tail.length === this.#tailLines) this.#tail.shift();
      // The tail ends up in error messages: keep the text, drop terminal colours.
      this.#tail.push(line.replace(ANSI_ESCAPE, ""));
    }
    const onLine = this.#onLine;
    if (onLine === undefined) return;
    try {
      onLine(line);
    } catch (error) {
      // A failing callback must not stop the draining: report it once and drop it.
      this.#onLine = undefined;
      reportError(error);
    }
  }
}
