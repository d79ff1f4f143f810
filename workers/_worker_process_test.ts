import assert from "node:assert/strict";
import { FrameTooLargeError } from "../errors.ts";
import { encodeFrame } from "../framing/frame_decoder.ts";
import { stdoutTextError } from "./_worker_process.ts";
import { WorkerStdoutError } from "./errors.ts";

const text = new TextEncoder().encode("hello from node\n");

function tooLarge(received: Uint8Array): FrameTooLargeError {
  return new FrameTooLargeError(1_751_477_356, 64 * 1024 * 1024, { received });
}

Deno.test("stdout text: the quote stops where the frames that followed the text begin", () => {
  // One read brought the text and the next frame: only the text is quoted.
  const frame = encodeFrame(new Uint8Array([1, 2, 3, 4, 5]));
  const received = new Uint8Array([...text, ...frame]);
  const error = stdoutTextError(new Error("failed", { cause: tooLarge(received) }));
  assert.ok(error instanceof WorkerStdoutError);
  assert.equal(error.text, "hello from node\n");
});

Deno.test("stdout text: UTF-8 text is quoted whole, up to 60 bytes; binary is not text", () => {
  const utf8 = new TextEncoder().encode("grüße ".repeat(20));
  assert.equal(
    stdoutTextError(tooLarge(utf8))?.text,
    new TextDecoder().decode(utf8.subarray(0, 60)),
  );
  assert.equal(stdoutTextError(tooLarge(new Uint8Array([0, 0, 0, 9, 65]))), undefined);
});
