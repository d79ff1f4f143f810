// LSP partial results: a call whose params carry a `partialResultToken` is a stream of the
// `$/progress` values naming that token, then its final result. The peer is a scripted
// server written with vscode-jsonrpc (_testdata/partial_results_server.ts); pyright_test.ts
// checks the same against pyright's textDocument/references.

import assert from "node:assert/strict";
import { openJsonRpc } from "./mod.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { cachedNpm, npmProgramArgs, VSCODE_JSONRPC } from "./_test_npm.ts";

interface Scripted {
  items(p: { count: number; partialResultToken: string | number }): AsyncIterable<unknown[]>;
  fails(p: { partialResultToken: string }): AsyncIterable<string[]>;
  endless(p: { partialResultToken: string }): AsyncIterable<number[]>;
  exit(): void;
}

const have = cachedNpm(`${VSCODE_JSONRPC}/node`, "vscode-jsonrpc partial results");
const server = new URL("./_testdata/partial_results_server.ts", import.meta.url).pathname;

Deno.test({
  name: "jsonrpc: partial results from a vscode-jsonrpc server arrive as the call's stream",
  ignore: !have,
  async fn() {
    const protocolErrors: unknown[] = [];
    const stderr: string[] = [];
    const cancelSeen = Promise.withResolvers<void>();
    const child = spawnTransport(Deno.execPath(), {
      args: npmProgramArgs("run", ["-A", server]),
      stderr: (line) => {
        stderr.push(line);
        if (line === "endless: cancelled") cancelSeen.resolve();
      },
    });
    const lsp = await openJsonRpc<Scripted>(child, {
      framing: "content-length",
      onProtocolError: (error) => protocolErrors.push(error),
    });
    try {
      // Each partial result as it arrives, then the final result; tokens may be numbers.
      const seen = [];
      for await (const part of lsp.remote.items({ count: 3, partialResultToken: 7 })) {
        seen.push(part);
      }
      assert.deepEqual(seen, [[1], [2], [3], ["final"]]);

      // Two calls in flight, each with its own token, each gets its own results.
      const [a, b] = await Promise.all([
        Array.fromAsync(lsp.remote.items({ count: 2, partialResultToken: "a" })),
        Array.fromAsync(lsp.remote.items({ count: 3, partialResultToken: "b" })),
      ]);
      assert.deepEqual(a, [[1], [2], ["final"]]);
      assert.deepEqual(b, [[1], [2], [3], ["final"]]);

      // An error after partial results: the stream yields them, then throws the error.
      const before: string[][] = [];
      await assert.rejects(
        (async () => {
          for await (const part of lsp.remote.fails({ partialResultToken: "f" })) before.push(part);
        })(),
        { name: "RemoteError", code: -32801, message: "the document changed" },
      );
      assert.deepEqual(before, [["a"], ["b"]]);

      // Leaving the loop cancels the request ($/cancelRequest): the server's token fires.
      let count = 0;
      for await (const _ of lsp.remote.endless({ partialResultToken: "e" })) {
        if (++count === 3) break;
      }
      await cancelSeen.promise;

      // A token already in flight is refused before anything is sent.
      const first = lsp.remote.endless({ partialResultToken: "dup" });
      const iterator = first[Symbol.asyncIterator]();
      await iterator.next();
      await assert.rejects(
        Array.fromAsync(lsp.remote.items({ count: 1, partialResultToken: "dup" })),
        { name: "TypeError", message: /partialResultToken "dup" of "items" is already/ },
      );
      await first.cancel();

      // Awaited instead of iterated, such a call says what to do.
      await assert.rejects(
        async () => await lsp.remote.items({ count: 1, partialResultToken: "p" }),
        { message: /"items" returned a stream: iterate it instead of awaiting it/ },
      );
    } finally {
      lsp.notify("exit", undefined);
      await lsp.close();
    }
    assert.equal((await child.status).code, 0, stderr.join("\n"));
    assert.deepEqual(protocolErrors, []);
  },
});
