// A hostile peer of the Web Worker transport: it posts to its parent by hand, as the scenario
// says, instead of opening selfTransport(); then it posts "done".

/// <reference lib="deno.worker" />

self.onmessage = (event: MessageEvent<string>) => {
  switch (event.data) {
    case "shared": { // data as a view of shared memory, which it keeps changing
      const shared = new Uint8Array(new SharedArrayBuffer(16)).fill(7);
      self.postMessage(shared);
      self.postMessage([shared]);
      setTimeout(() => shared.fill(9), 50);
      break;
    }
    case "flood": // 64 MiB, never waiting for credit
      for (let i = 0; i < 256; i++) {
        const chunk = new Uint8Array(256 * 1024);
        self.postMessage(chunk, [chunk.buffer]);
      }
      break;
  }
  self.postMessage("done");
};
