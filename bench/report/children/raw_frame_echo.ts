// The ceiling: length-prefixed frames over the same conduit transport, with no codec and no
// protocol. Frames are echoed as they are, except those whose first byte is an opcode (payloads
// under test are JSON and start with `{`):
//   0xFE  one-way: count it, answer nothing
//   0xFD  answer with the count so far (u32, big-endian)
//   0xFC  u32 count, u32 bytes: send `count` frames of `bytes` bytes (a one-way stream)
//
//   deno run -A raw_frame_echo.ts <stdio|unix|tcp> <path|port|->

import { FrameDecoder, FrameWriter } from "../../../framing/mod.ts";
import type { Transport } from "../../../transports/types.ts";
import { REPORT_MAX_FRAME_BYTES } from "../_bench_api.ts";
import { connectParent } from "./_connect.ts";

/** Opcodes in a frame's first byte. */
export const OP_SINK = 0xfe;
export const OP_COUNT = 0xfd;
export const OP_SOURCE = 0xfc;

/** Serves raw frames on `transport` until the other side closes it. */
export async function serveRawFrames(transport: Transport): Promise<void> {
  const writer = new FrameWriter(transport.writable);
  const decoder = new FrameDecoder({ maxFrameBytes: REPORT_MAX_FRAME_BYTES });
  let count = 0;
  for await (const chunk of transport.readable) {
    decoder.push(chunk);
    for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
      const op = frame[0];
      if (op === OP_SINK) count++;
      else if (op === OP_COUNT) {
        const answer = new Uint8Array(4);
        new DataView(answer.buffer).setUint32(0, count);
        writer.write(answer);
      } else if (op === OP_SOURCE) {
        const view = new DataView(frame.buffer, frame.byteOffset, frame.byteLength);
        await source(writer, view.getUint32(1), view.getUint32(5));
      } else writer.write(frame);
    }
  }
  await writer.close().catch(() => {});
  await transport.close();
}

if (import.meta.main) {
  const [kind, address] = Deno.args;
  await serveRawFrames(await connectParent(kind, address));
}

async function source(writer: FrameWriter, count: number, bytes: number): Promise<void> {
  const item = new Uint8Array(bytes).fill(0x5a);
  for (let i = 0; i < count; i++) {
    writer.write(item);
    if (writer.desiredSize <= 0) await writer.ready;
  }
}
