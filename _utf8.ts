// The UTF-8 length of a string, without encoding it: what a limit in bytes is checked against.

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
