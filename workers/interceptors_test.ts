// Interceptors and call headers through real worker processes and a pool: a header the
// parent's interceptor adds reaches the worker's handler, the worker's handler-side
// interceptor sees the call, and a nested call back to the parent carries the header on.

import assert from "node:assert/strict";
import type { CallContext } from "../channel/call_context.ts";
import type { Interceptor } from "../channel/types.ts";
import { leakFreeTest, testEnv } from "./_test_processes.ts";
import type { HeadersApi } from "./_testdata/headers_worker.ts";
import { spawnWorker } from "./spawn_worker.ts";
import { WorkerPool } from "./worker_pool.ts";

const WORKER = new URL("./_testdata/headers_worker.ts", import.meta.url);

function tagging(id: string, log: string[]): Interceptor {
  return {
    call: (call, next) => {
      call.headers["x-request-id"] = id;
      log.push(`call ${call.method}`);
      return next(call);
    },
    handle: (call, next) => {
      log.push(`handle ${call.method} ${call.context.headers["x-request-id"]}`);
      return next(call);
    },
  };
}

const parentHandlers = {
  whoCalls: (_: null, ctx: CallContext) => `parent saw ${ctx.headers["x-request-id"]}`,
};

leakFreeTest("interceptors: a process worker sees the parent's headers, both ways", async () => {
  const log: string[] = [];
  const worker = await spawnWorker<HeadersApi>(WORKER, {
    env: testEnv(),
    handlers: parentHandlers,
    interceptors: [tagging("r-7", log)],
  });
  try {
    assert.deepEqual(await worker.remote.headers(null), { "x-request-id": "r-7", worker: "seen" });
    assert.equal(await worker.remote.nested(null), "parent saw r-7");
    assert.deepEqual(log, ["call headers", "call nested", "handle whoCalls r-7"]);
  } finally {
    await worker.close();
  }
});

leakFreeTest("interceptors: a pool's calls pass through them on every worker", async () => {
  const log: string[] = [];
  const pool = new WorkerPool<HeadersApi>(WORKER, {
    size: 2,
    env: testEnv(),
    interceptors: [tagging("r-9", log)],
  });
  try {
    const results = await Promise.all(
      Array.from({ length: 6 }, () => pool.remote.headers(null)),
    );
    for (const result of results) {
      assert.deepEqual(result, { "x-request-id": "r-9", worker: "seen" });
    }
    assert.equal(log.filter((line) => line === "call headers").length, 6);
  } finally {
    await pool.close();
  }
});
