// The child every JSON-RPC client of bench/jsonrpc_stdio.ts talks to: a plain, hand-written
// JSON-RPC echo server over stdio (not conduit), answering `echo` with its params. Framing
// from the first argument: "ndjson" or "content-length". The answers to one read leave in
// one synchronous write.

const framing = Deno.args[0] === "ndjson" ? "ndjson" : "content-length";
const encoder = new TextEncoder();
const decoder = new TextDecoder();
let pending: Uint8Array = new Uint8Array(0);

function answer(text: string): string {
  const message = JSON.parse(text) as { id?: number | string; params?: unknown };
  if (message.id === undefined) return "";
  const body = JSON.stringify({ jsonrpc: "2.0", id: message.id, result: message.params ?? null });
  return framing === "ndjson"
    ? body + "\n"
    : `Content-Length: ${encoder.encode(body).length}\r\n\r\n${body}`;
}

function frames(bytes: Uint8Array): [string[], Uint8Array] {
  const out: string[] = [];
  let offset = 0;
  while (offset < bytes.length) {
    if (framing === "ndjson") {
      const lf = bytes.indexOf(10, offset);
      if (lf === -1) break;
      out.push(decoder.decode(bytes.subarray(offset, lf)));
      offset = lf + 1;
    } else {
      let end = -1;
      for (let i = offset; i + 3 < bytes.length; i++) {
        if (bytes[i] === 13 && bytes[i + 1] === 10 && bytes[i + 2] === 13 && bytes[i + 3] === 10) {
          end = i;
          break;
        }
      }
      if (end === -1) break;
      const header = decoder.decode(bytes.subarray(offset, end));
      const length = Number(/Content-Length:\s*(\d+)/i.exec(header)![1]);
      if (end + 4 + length > bytes.length) break;
      out.push(decoder.decode(bytes.subarray(end + 4, end + 4 + length)));
      offset = end + 4 + length;
    }
  }
  return [out, bytes.slice(offset)];
}

for await (const chunk of Deno.stdin.readable) {
  const joined = new Uint8Array(pending.length + chunk.length);
  joined.set(pending);
  joined.set(chunk, pending.length);
  const [messages, rest] = frames(joined);
  pending = rest;
  const out = encoder.encode(messages.map(answer).join(""));
  let written = 0;
  while (written < out.length) written += Deno.stdout.writeSync(out.subarray(written));
}
