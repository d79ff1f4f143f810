// A worker that joins its parent's transport (over `self`) to a MessagePort transport it is
// sent first (with the transports' options): the conformance suite then has both ends of a real cross-thread pair in the
// test's thread, the bytes crossing into this worker and back.

/// <reference lib="deno.worker" />

import {
  messagePortTransport,
  selfTransport,
  type WebWorkerTransportOptions,
} from "../web_worker.ts";

self.onmessage = (
  event: MessageEvent<{ port: MessagePort; options: WebWorkerTransportOptions }>,
) => {
  self.onmessage = null;
  const { port, options } = event.data;
  const up = selfTransport(options);
  const down = messagePortTransport(port, options);
  void up.readable.pipeTo(down.writable).catch(() => {});
  void down.readable.pipeTo(up.writable).catch(() => {});
};
