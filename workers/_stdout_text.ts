// Telling a worker that printed to its stdout from a broken frame: on the stdio transport a
// text write lands where a frame header is expected, and the decoder refuses the "length" the
// text makes (four printable bytes read as a length are at least 150 MB). Such an error, found
// in a failure's cause chain, becomes a WorkerStdoutError that quotes the text.

import { FrameTooLargeError } from "../errors.ts";
import { WorkerStdoutError } from "./errors.ts";

/** At most this many bytes of the text are quoted. */
const QUOTED_BYTES = 60;
/** How deep to look in a cause chain. */
const MAX_DEPTH = 8;

/** The WorkerStdoutError that explains `error`, if text on stdout caused it. */
export function stdoutTextError(error: unknown): WorkerStdoutError | undefined {
  let current = error;
  for (let depth = 0; depth < MAX_DEPTH && current instanceof Error; depth++) {
    if (current instanceof WorkerStdoutError) return current;
    if (current instanceof FrameTooLargeError && looksLikeText(current.received)) {
      // The bytes after the text may be the frames that followed it in the same read.
      const received = current.received!.subarray(0, QUOTED_BYTES);
      const end = received.findIndex((byte) => !isTextByte(byte));
      const text = new TextDecoder().decode(end < 0 ? received : received.subarray(0, end));
      return new WorkerStdoutError(text, { cause: current });
    }
    current = current.cause;
  }
  return undefined;
}

/** Whether a frame header is text: each byte printable ASCII, a tab or line break, or UTF-8. */
function looksLikeText(bytes: Uint8Array | undefined): boolean {
  if (bytes === undefined || bytes.length < 4) return false;
  for (let i = 0; i < 4; i++) if (!isTextByte(bytes[i])) return false;
  return true;
}

/** Printable ASCII, a tab or a line break, or a byte of a UTF-8 sequence. */
function isTextByte(byte: number): boolean {
  return (byte >= 0x20 && byte < 0x7f) || byte === 0x09 || byte === 0x0a || byte === 0x0d ||
    byte >= 0x80;
}
