// A worker whose transport never reads: the peer of the dies-mid-write case.

/// <reference lib="deno.worker" />

import { selfTransport } from "../web_worker.ts";

selfTransport();
