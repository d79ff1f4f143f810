// How a report child reaches its parent: its own stdio, or the Unix socket / TCP port the
// parent listens on (passed as arguments).

import { stdioTransport } from "../../../transports/stdio.ts";
import { connectTcp } from "../../../transports/tcp.ts";
import type { Transport } from "../../../transports/types.ts";
import { connectUnix } from "../../../transports/unix.ts";

/** Connects to the parent over `kind` (`stdio`, `unix` with a path, `tcp` with a port). */
export function connectParent(kind: string, address: string): Promise<Transport> {
  switch (kind) {
    case "stdio":
      return Promise.resolve(stdioTransport());
    case "unix":
      return connectUnix(address);
    case "tcp":
      return connectTcp({ port: Number(address) });
    default:
      throw new TypeError(`Unknown transport "${kind}"`);
  }
}
