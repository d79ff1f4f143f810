import assert from "node:assert/strict";
import { FrameTooLargeError } from "../errors.ts";
import { encodeFrame } from "../framing/frame_decoder.ts";
import { stdoutTextError } from "./_worker_process.ts";
import { WorkerStdoutError } from "./errors.ts";
import { readBufferBytes } from "../transports/_byte_channel_transport.ts";
import { leakFreeTest, testEnv } from "./_test_processes.ts";
import type { EchoApi } from "./_testdata/echo_worker.ts";
import { spawnWorker } from "./spawn_worker.ts";

const ECHO = new URL("./_testdata/echo_worker.ts", import.meta.url);
const MIB = 1024 * 1024;
const ITEMS = 16;

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

for (const transport of ["stdio", "unix"] as const) {
  leakFreeTest(
    `worker over ${transport}: large stream items are read into their own buffers, no read buffers`,
    async () => {
      // The worker's transport passes on its direct reads: each 1 MiB item is read straight
      // into a buffer of its own, so the channel's read buffers (whose chunks a large frame
      // would otherwise be copied out of, a fresh one per 256 KiB) are barely used.
      await using worker = await spawnWorker<EchoApi>(ECHO, { transport, env: testEnv() });
      assert.equal(await worker.remote.echo("warm"), "warm");
      const before = readBufferBytes().allocated;
      let index = 0;
      for await (const item of worker.remote.blobs({ count: ITEMS, bytes: MIB })) {
        assert.equal(item.length, MIB);
        assert.equal(item[0], index & 0xff);
        assert.equal(item[MIB - 1], index++ & 0xff);
      }
      assert.equal(index, ITEMS);
      const allocated = readBufferBytes().allocated - before;
      assert.ok(
        allocated < MIB,
        `${allocated} bytes of read buffers allocated for ${ITEMS} items of 1 MiB`,
      );
    },
  );
}
