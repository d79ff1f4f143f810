// A worker that is busy for a while at its top level (an await) before it opens its end of
// the transport, then echoes what it reads: the parent's first writes reach it before it
// listens.

/// <reference lib="deno.worker" />

import { selfTransport } from "../web_worker.ts";

await new Promise((resolve) => setTimeout(resolve, 300));
const transport = selfTransport();
await transport.readable.pipeTo(transport.writable).catch(() => {});
