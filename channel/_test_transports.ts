// Transport pairs the channel tests run over: the in-memory pair and a real Unix socket.

import type { Transport } from "../transports/types.ts";
import { memoryPair } from "../transports/memory.ts";
import { connectUnix, listenUnix } from "../transports/unix.ts";

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
    return Promise.resolve({
      a,
      b,
      cleanup: () => Promise.all([a.close(), b.close()]).then(() => {}),
    });
  },
};

/** Both ends of a Unix socket connection (transports/unix.ts) under a fresh temporary directory. */
export const unix: TransportKind = {
  name: "unix",
  async pair() {
    const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
    const listener = await listenUnix(`${dir}/s`);
    const accepted = listener.accept();
    const b = await connectUnix(`${dir}/s`);
    const a = await accepted;
    await listener.close();
    return {
      a,
      b,
      async cleanup() {
        await Promise.all([a.close(), b.close()]);
        await Deno.remove(dir, { recursive: true });
      },
    };
  },
};

/** Every transport kind. */
export const transportKinds: TransportKind[] = [memory, unix];
