import assert from "node:assert/strict";
import { StderrLines } from "./_child_process.ts";

const encoder = new TextEncoder();

/** A stream of `chunks`, as a pipe might cut them. */
function streamOf(...chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  return ReadableStream.from(chunks.map((c) => typeof c === "string" ? encoder.encode(c) : c));
}

Deno.test("StderrLines: lines across chunks, CRLF, a last line without a break", async () => {
  const lines: string[] = [];
  const reader = new StderrLines(streamOf("one\r\ntw", "o\n\nthr", "ee"), {
    maxLineChars: 100,
    onLine: (line) => lines.push(line),
  });
  await reader.done;
  assert.deepEqual(lines, ["one", "two", "", "three"]);
});

Deno.test("StderrLines: a UTF-8 character split between chunks stays whole", async () => {
  const bytes = encoder.encode("é\n");
  const lines: string[] = [];
  await new StderrLines(streamOf(bytes.subarray(0, 1), bytes.subarray(1)), {
    maxLineChars: 100,
    onLine: (line) => lines.push(line),
  }).done;
  assert.deepEqual(lines, ["é"]);
});

Deno.test("StderrLines: lines longer than maxLineChars come in pieces, whole or partial", async () => {
  const lines: string[] = [];
  // One long line inside a chunk, then one that grows across chunks with no break yet.
  await new StderrLines(streamOf("a".repeat(25) + "\n", "b".repeat(8), "b".repeat(8)), {
    maxLineChars: 10,
    onLine: (line) => lines.push(line),
  }).done;
  assert.deepEqual(lines, [
    "a".repeat(10),
    "a".repeat(10),
    "a".repeat(5),
    "b".repeat(10),
    "b".repeat(6),
  ]);
  assert.ok(lines.every((line) => line.length <= 10));
});

Deno.test("StderrLines: the tail keeps the last lines without terminal colours", async () => {
  const seen: string[] = [];
  const reader = new StderrLines(streamOf("1\n2\n\x1b[31merror\x1b[0m: 3\n"), {
    maxLineChars: 100,
    tailLines: 2,
    onLine: (line) => seen.push(line),
  });
  await reader.done;
  assert.deepEqual(reader.tail, ["2", "error: 3"]);
  assert.equal(seen[2], "\x1b[31merror\x1b[0m: 3"); // the callback gets the line as written
});

Deno.test("StderrLines: a throwing callback is reported once and the stream is still drained", async () => {
  const reported: unknown[] = [];
  const onError = (event: ErrorEvent) => {
    event.preventDefault();
    reported.push(event.error);
  };
  globalThis.addEventListener("error", onError);
  try {
    let calls = 0;
    let pulled = 0;
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (++pulled > 3) return controller.close();
        controller.enqueue(encoder.encode("line\n"));
      },
    });
    const reader = new StderrLines(stream, {
      maxLineChars: 100,
      tailLines: 5,
      onLine: () => {
        calls++;
        throw new Error("boom");
      },
    });
    await reader.done;
    assert.equal(calls, 1);
    assert.equal(reported.length, 1);
    assert.equal((reported[0] as Error).message, "boom");
    assert.equal(pulled, 4); // read to its end
    assert.deepEqual(reader.tail, ["line", "line", "line"]);
  } finally {
    globalThis.removeEventListener("error", onError);
  }
});

Deno.test("StderrLines: cancel() stops reading a stream that never ends", async () => {
  let cancelled = false;
  const stream = new ReadableStream<Uint8Array>({
    start(controller) {
      controller.enqueue(encoder.encode("partial"));
    },
    cancel() {
      cancelled = true;
    },
  });
  const lines: string[] = [];
  const reader = new StderrLines(stream, { maxLineChars: 100, onLine: (l) => lines.push(l) });
  await reader.cancel();
  await reader.done;
  assert.ok(cancelled);
  assert.deepEqual(lines, ["partial"]);
});

Deno.test("StderrLines: the excerpt keeps the first lines and error lines before the tail", async () => {
  const list = Array.from({ length: 30 }, (_, i) => ` * ./export${i}`);
  const output = [
    "\x1b[1m\x1b[31merror\x1b[0m: Unknown export './workers/serv' for '@conduit/ipc'.",
    "  Package exports:",
    ...list,
    "TypeError: a later failure",
    ...list.slice(0, 10),
  ];
  const reader = new StderrLines(streamOf(output.join("\n") + "\n"), {
    maxLineChars: 200,
    tailLines: 5,
  });
  await reader.done;
  assert.deepEqual(reader.tail, list.slice(5, 10));
  assert.deepEqual(reader.excerpt, [
    "error: Unknown export './workers/serv' for '@conduit/ipc'.",
    "  Package exports:",
    " * ./export0",
    "… (29 lines left out)",
    "TypeError: a later failure",
    "… (5 lines left out)",
    ...list.slice(5, 10),
  ]);
  // Short output: all of it, nothing marked.
  const short = new StderrLines(streamOf("a\nb\n"), { maxLineChars: 200, tailLines: 5 });
  await short.done;
  assert.deepEqual(short.excerpt, ["a", "b"]);
});
