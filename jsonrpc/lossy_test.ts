import assert from "node:assert/strict";
import { openJsonRpc } from "./mod.ts";
import { memoryPair } from "../transports/memory.ts";

interface Server {
  counts(p: object): Map<string, number>;
}

async function pair(lossy: boolean | undefined) {
  const [a, b] = memoryPair();
  const server = await openJsonRpc(a, {
    framing: "ndjson",
    ...(lossy === undefined ? {} : { lossy }),
    handlers: { counts: () => new Map([["a", 1]]) },
  });
  const client = await openJsonRpc<Server>(b, { framing: "ndjson" });
  return { server, client, close: () => Promise.all([client.close(), server.close()]) };
}

Deno.test("jsonrpc: a result JSON would change fails the call naming its path; lossy: true sends it as JSON does", async () => {
  const strict = await pair(undefined);
  await assert.rejects(strict.client.remote.counts({}), (error: Error) => {
    assert.match(error.message, /\$ is an instance of Map, which JSON writes as \{\}/);
    assert.match(error.message, /"counts"/);
    return true;
  });
  await strict.close();
  const lossy = await pair(true);
  assert.deepEqual(await lossy.client.remote.counts({}), {});
  await lossy.close();
});
