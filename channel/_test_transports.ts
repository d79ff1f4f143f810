// Transport pairs the channel tests run over: the in-memory pair and a real Unix socket.

import type { Transport } from "../transports/types.ts";
import { memoryPair } from "../transports/memory.ts";

/** A connected pair of transports and how to release what they hold. */
export interface TestPair {
  a: Transport;
  b: Transport;
  cleanup(): Promise<void>;
}

/** One way to connect two channels. */
export interface TransportKind {
  name: string;
  pair(): Promise<TestPair>;
}

/** The in-memory pair. */
export const memory: TransportKind = {
  name: "memory",
  pair() {
    const [a, b] = memoryPair();
    return Promise.resolve({ a, b, cleanup: () => Promise.resolve() });
  },
};

/** Both ends of a Unix socket connection under a fresh temporary directory. */
export const unix: TransportKind = {
  name: "unix",
  async pair() {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
    const path = `${dir}/s`;
    const listener = Deno.listen({ transport: "unix", path });
    const [client, server] = await Promise.all([
      Deno.connect({ transport: "unix", path }),
      listener.accept(),
    ]);
    listener.close();
    return {
      a: connTransport(server),
      b: connTransport(client),
      cleanup: () => Deno.remove(dir, { recursive: true }),
    };
  },
};

/** Every transport kind. */
export const transportKinds: TransportKind[] = [memory, unix];

function connTransport(conn: Deno.Conn): Transport {
  let closing: Promise<void> | undefined;
  const release = () => {
    try {
      conn.close();
    } catch {
      // Its streams already closed it.
    }
  };
  return {
    readable: conn.readable,
    writable: conn.writable,
    close: () => closing ??= Promise.resolve().then(release),
    abort: () => closing ??= Promise.resolve().then(release),
    [Symbol.asyncDispose]() {
      return this.close();
    },
  };
}
