// A peer written from the bell's layout (transports/_post_message_channel.ts), so that a test
// controls when an answer comes. It is sent a MessagePort and a shared flag; on that port it
// takes the other end's bell, answers each data message `delayMs` later with the same bytes
// (storing the message's number in the flag just before), and tells the bell, before each
// answer, that it took the next data message too, so that a spin there never gives up for
// want of that.

/// <reference lib="deno.worker" />

const BELL_POSTED = 0;
const BELL_TAKEN = 1;

self.onmessage = (
  event: MessageEvent<{ port: MessagePort; flag: Int32Array; delayMs: number }>,
) => {
  self.onmessage = null;
  const { port, flag, delayMs } = event.data;
  let bell: Int32Array | undefined;
  let received = 0;
  let posted = 0;
  port.onmessage = ({ data }: MessageEvent) => {
    if (data instanceof Int32Array) {
      bell = data;
      Atomics.store(bell, BELL_TAKEN, received + 1);
    } else if (data instanceof Uint8Array) {
      const number = ++received;
      setTimeout(() => {
        Atomics.store(flag, 0, number);
        if (bell !== undefined) Atomics.store(bell, BELL_TAKEN, received + 1);
        port.postMessage(data);
        posted++;
        if (bell !== undefined) Atomics.store(bell, BELL_POSTED, posted);
      }, number === 1 ? 0 : delayMs);
    }
  };
};
