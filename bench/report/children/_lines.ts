// Splits a text stream into lines, searching only each new chunk for a newline: linear in the
// input however long a line is.

/** The lines of `text`, without their newlines; a last line without one is not yielded. */
export async function* lines(text: AsyncIterable<string>): AsyncGenerator<string> {
  let parts: string[] = [];
  for await (const chunk of text) {
    let start = 0;
    for (let end = chunk.indexOf("\n"); end >= 0; end = chunk.indexOf("\n", start)) {
      parts.push(chunk.slice(start, end));
      yield parts.length === 1 ? parts[0] : parts.join("");
      parts = [];
      start = end + 1;
    }
    if (start < chunk.length) parts.push(chunk.slice(start));
  }
}
