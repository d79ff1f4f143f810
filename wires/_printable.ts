// What a wire trace shows of the text a peer chose (method names, reasons, bodies): its control
// characters escaped, so that it cannot start a line of its own or drive the terminal.

/**
 * Characters a terminal or a log reader acts on rather than shows: C0 and C1 controls (line
 * breaks, escape sequences), DEL, Unicode's line and paragraph separators and its bidirectional
 * overrides and isolates.
 */
// deno-lint-ignore no-control-regex
const UNPRINTABLE = /[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;
const ALL_UNPRINTABLE = new RegExp(UNPRINTABLE.source, "g");

/** `line` with the characters of {@linkcode UNPRINTABLE} written as `\uXXXX` escapes. */
export function printable(line: string): string {
  if (!UNPRINTABLE.test(line)) return line;
  return line.replace(
    ALL_UNPRINTABLE,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`,
  );
}
