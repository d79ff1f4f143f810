// LSP's ContentModified and ServerCancelled as a client meets them: a RemoteError with the
// code, recognised by isRemoteErrorCode, and the request asked again.

import assert from "node:assert/strict";
import { memoryPair } from "../transports/memory.ts";
import {
  CONTENT_MODIFIED,
  isRemoteErrorCode,
  openJsonRpc,
  REQUEST_CANCELLED,
  SERVER_CANCELLED,
} from "./mod.ts";

interface Server {
  "textDocument/semanticTokens/full"(p: { version: number }): { data: number[] };
  "textDocument/diagnostic"(p: object): { items: string[] };
}

Deno.test("jsonrpc lsp codes: ContentModified and ServerCancelled are recognised and asked again", async () => {
  let version = 1;
  let diagnosticsAsked = 0;
  const [a, b] = memoryPair();
  const server = await openJsonRpc(a, {
    framing: "content-length",
    handlers: {
      "textDocument/semanticTokens/full": ({ version: asked }: { version: number }) => {
        if (asked !== version) {
          throw Object.assign(new Error("content modified"), { code: CONTENT_MODIFIED });
        }
        return { data: [asked] };
      },
      "textDocument/diagnostic": () => {
        if (++diagnosticsAsked === 1) {
          throw Object.assign(new Error("busy"), {
            code: SERVER_CANCELLED,
            data: { retriggerRequest: true },
          });
        }
        return { items: ["ok"] };
      },
    } satisfies Server,
  });
  const client = await openJsonRpc<Server>(b, { framing: "content-length" });
  version = 2;
  const stale = await client.remote["textDocument/semanticTokens/full"]({ version: 1 }).then(
    () => undefined,
    (error) => error,
  );
  assert.ok(isRemoteErrorCode(stale, CONTENT_MODIFIED), String(stale));
  assert.equal(stale.code, -32801);
  assert.ok(!isRemoteErrorCode(stale, SERVER_CANCELLED));
  // Asked again against the current content.
  assert.deepEqual(await client.remote["textDocument/semanticTokens/full"]({ version }), {
    data: [2],
  });
  const busy = await client.remote["textDocument/diagnostic"]({}).then(() => undefined, (e) => e);
  assert.ok(isRemoteErrorCode(busy, SERVER_CANCELLED));
  assert.deepEqual(busy.data, { retriggerRequest: true });
  assert.deepEqual(await client.remote["textDocument/diagnostic"]({}), { items: ["ok"] });
  assert.equal(REQUEST_CANCELLED, -32800);
  await Promise.all([client.close(), server.close()]);
});
