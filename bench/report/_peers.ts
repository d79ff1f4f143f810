// Spawning a report child connected over stdio, a Unix socket or TCP: the parent listens, the
// child connects (its stdout and stdin are then unused), or the child talks over its stdio.

import { memoryPair } from "../../transports/memory.ts";
import { spawnTransport } from "../../transports/stdio.ts";
import { listenTcp } from "../../transports/tcp.ts";
import type { Listener, Transport } from "../../transports/types.ts";
import { listenUnix } from "../../transports/unix.ts";
import type { TransportName } from "./_bench_api.ts";

/** A child process and the transport to it. */
export interface Peer {
  readonly transport: Transport;
  readonly pid: number;
  readonly status: Promise<Deno.CommandStatus>;
  /**
   * Closes the transport (if the protocol on top has not), waits for the child to exit and
   * kills it if it has not within a few seconds.
   */
  close(): Promise<void>;
}

const EXIT_TIMEOUT_MS = 5_000;
let socketCount = 0;

/**
 * Spawns `deno run -A script <kind> <address> ...args` connected to us over `kind`.
 *
 * @param socketDir A short directory for Unix socket files.
 */
export async function spawnPeer(
  kind: TransportName,
  script: URL,
  args: string[],
  socketDir: string,
): Promise<Peer> {
  if (kind === "stdio") {
    const child = spawnTransport(Deno.execPath(), {
      args: ["run", "-A", script.pathname, "stdio", "-", ...args],
      stderr: "inherit",
      exitTimeout: EXIT_TIMEOUT_MS,
    });
    return {
      transport: child,
      pid: child.pid,
      status: child.status,
      close: () => child.close(),
    };
  }
  const listener: Listener = kind === "unix"
    ? await listenUnix(`${socketDir}/${++socketCount}.sock`)
    : listenTcp({ port: 0 });
  const address = kind === "unix"
    ? (listener.addr as Deno.UnixAddr).path
    : String((listener.addr as Deno.NetAddr).port);
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script.pathname, kind, address, ...args],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  try {
    const accepted = listener[Symbol.asyncIterator]().next();
    const exited = child.status.then((status) => {
      throw new Error(`The ${kind} peer exited with code ${status.code} before connecting`);
    });
    const { value: transport } = await Promise.race([accepted, exited]);
    return {
      transport: transport as Transport,
      pid: child.pid,
      status: child.status,
      async close() {
        await (transport as Transport).close();
        await exitOrKill(child);
      },
    };
  } catch (error) {
    killQuietly(child);
    await child.status;
    throw error;
  } finally {
    await listener.close();
  }
}

async function exitOrKill(child: Deno.ChildProcess): Promise<void> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timedOut = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(true), EXIT_TIMEOUT_MS);
  });
  if (await Promise.race([child.status.then(() => false), timedOut])) killQuietly(child);
  clearTimeout(timer);
  await child.status;
}

function killQuietly(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // Exited already.
  }
}

/**
 * An in-process peer over a memory pair: `serve` runs on one end, the returned peer holds the
 * other (its `pid` is ours).
 */
export function memoryPeer(serve: (transport: Transport) => Promise<unknown>): Peer {
  const [ours, theirs] = memoryPair();
  const serving = serve(theirs);
  return {
    transport: ours,
    pid: Deno.pid,
    status: serving.then(() => ({ success: true, code: 0, signal: null })),
    async close() {
      await ours.close();
      await serving;
      await theirs.close();
    },
  };
}
