// The classic way, without conduit: JSON lines over stdin/stdout. Requests are
// `{"id":1,"method":"echo","params":…}`, answers `{"id":1,"result":…}`; a line without an id
// is a notification (counted). The line splitter searches only the new chunk for a newline, so
// a 10 MB line costs linear time (a naive `(buffer + chunk).split("\n")` is quadratic there).
//
//   deno run -A ndjson_echo.ts

import { lines } from "./_lines.ts";

const encoder = new TextEncoder();
const out = Deno.stdout.writable.getWriter();
let notes = 0;

for await (const line of lines(Deno.stdin.readable.pipeThrough(new TextDecoderStream()))) {
  const message = JSON.parse(line);
  if (message.id === undefined) {
    notes++;
    continue;
  }
  const result = message.method === "noted" ? notes : message.params;
  await out.write(encoder.encode(JSON.stringify({ id: message.id, result }) + "\n"));
}
