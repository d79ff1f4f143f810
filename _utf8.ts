// The UTF-8 length of a string, without encoding it: what a limit in bytes is checked against;
// the longest start of a text that fits such a limit; and what a log may show of a text the
// peer chose (a reason, a name): its control characters escaped, so that it cannot start a
// line of its own or drive the terminal.

/**
 * The bytes `text` takes as UTF-8, as `TextEncoder` writes it (a lone surrogate as U+FFFD).
 */
export function utf8Length(text: string): number {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const unit = text.charCodeAt(i);
    if (unit < 0x80) continue;
    if (unit < 0x800) {
      bytes += 1;
      continue;
    }
    if (unit <= 0xdbff && unit >= 0xd800 && i + 1 < text.length) {
      const next = text.charCodeAt(i + 1);
      if (next >= 0xdc00 && next <= 0xdfff) {
        bytes += 2; // a pair: 4 bytes for its 2 units
        i++;
        continue;
      }
    }
    bytes += 2;
  }
  return bytes;
}

/**
 * The longest start of `text`, in whole code points and strictly shorter than it, for which
 * `fits(start + mark)` holds, followed by `mark`; "" when none does. `fits` must hold for a
 * start whenever it holds for a longer one (a size that grows with the text does), and never
 * for one of more than `room` UTF-16 units (each takes at least a byte of UTF-8): a long text
 * costs a search of its first `room` units only.
 */
export function fittedText(
  text: string,
  mark: string,
  fits: (candidate: string) => boolean,
  room: number,
): string {
  // A binary search over the starts' lengths in UTF-16 units, kept at code point boundaries.
  let low = -1;
  let high = boundaryAtOrBefore(text, Math.min(text.length - 1, room));
  while (low < high) {
    const length = boundaryAtOrAfter(text, Math.ceil((low + high) / 2));
    if (fits(text.slice(0, length) + mark)) low = length;
    else high = boundaryAtOrBefore(text, length - 1);
  }
  return low < 0 ? "" : text.slice(0, low) + mark;
}

/** Whether a start of `length` units would cut a surrogate pair in two. */
function splitsPair(text: string, length: number): boolean {
  if (length <= 0 || length >= text.length) return false;
  const before = text.charCodeAt(length - 1);
  const after = text.charCodeAt(length);
  return before >= 0xd800 && before <= 0xdbff && after >= 0xdc00 && after <= 0xdfff;
}

function boundaryAtOrBefore(text: string, length: number): number {
  return splitsPair(text, length) ? length - 1 : length;
}

function boundaryAtOrAfter(text: string, length: number): number {
  return splitsPair(text, length) ? length + 1 : length;
}

/**
 * Characters a terminal or a log reader acts on rather than shows: C0 and C1 controls (line
 * breaks, escape sequences), DEL, Unicode's line and paragraph separators and its bidirectional
 * overrides and isolates.
 */
// deno-lint-ignore no-control-regex
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** `text` with the characters of {@linkcode UNPRINTABLE} written as `\uXXXX` escapes. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
