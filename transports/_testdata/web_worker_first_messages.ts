// A worker that says it listens, as a worker's end of the Web Worker transport does, then
// reports what kind of thing each of the first two messages from its parent was.

/// <reference lib="deno.worker" />

const LISTENING = -5;
const kinds: string[] = [];
self.onmessage = ({ data }: MessageEvent) => {
  kinds.push(
    data instanceof Int32Array
      ? `Int32Array(${data.length}) on ${data.buffer.constructor.name}`
      : data instanceof Uint8Array
      ? "Uint8Array"
      : typeof data,
  );
  if (kinds.length === 2) self.postMessage({ kinds });
};
self.postMessage(LISTENING);
