// A stdio child for the transport tests: relays its stdio to the Unix socket named by its
// first argument, in both directions, half-closes included, and exits when both are done.
// The test then holds both ends of a pair whose bytes cross a real child process.
import { stdioTransport } from "../../transports/stdio.ts";
import { connectUnix } from "../../transports/unix.ts";

const stdio = stdioTransport();
const socket = await connectUnix(Deno.args[0]);
await Promise.all([
  stdio.readable.pipeTo(socket.writable).catch(() => {}),
  socket.readable.pipeTo(stdio.writable).catch(() => {}),
]);
await Promise.all([stdio.close(), socket.close()]);
