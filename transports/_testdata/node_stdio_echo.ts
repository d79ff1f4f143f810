// Run by Node or Bun for node_stdio_test.ts: echoes stdin to stdout through stdioTransport()
// until stdin ends, closes stdout, then says on stderr that it is still running and closes
// the transport. Nothing calls process.exit: the process must end on its own.
import process from "node:process";
import { stdioTransport } from "../stdio_child.ts";

const transport = stdioTransport();
let bytes = 0;
await transport.readable
  .pipeThrough(
    new TransformStream({ transform: (chunk, c) => (bytes += chunk.length, c.enqueue(chunk)) }),
  )
  .pipeTo(transport.writable);
process.stderr.write(`echoed ${bytes}\n`);
await new Promise((resolve) => setTimeout(resolve, 1000));
process.stderr.write("still running\n");
await transport.close();
