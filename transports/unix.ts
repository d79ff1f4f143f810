/**
 * Unix domain socket transports: {@linkcode listenUnix} and {@linkcode connectUnix}.
 *
 * The socket file is owner-only (mode 0600) from the moment it is reachable, a stale file
 * left by a dead process is replaced, a live listener's file is never taken over, and the
 * file is removed when the listener closes.
 *
 * @example Echo over a Unix socket
 * ```ts
 * import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
 * import assert from "node:assert/strict";
 *
 * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
 * const path = `${dir}/echo.sock`;
 * await using listener = await listenUnix(path);
 * const serving = (async () => {
 *   for await (const server of listener) {
 *     await server.readable.pipeTo(server.writable); // echo until the client half-closes
 *     await server.close();
 *     return;
 *   }
 * })();
 * await using client = await connectUnix(path);
 * const writer = client.writable.getWriter();
 * await writer.write(new TextEncoder().encode("hi"));
 * await writer.close();
 * assert.equal(await new Response(client.readable).text(), "hi");
 * await serving;
 * await listener.close();
 * await Deno.remove(dir);
 * ```
 *
 * @module
 */

import { connTransport } from "./_conn_transport.ts";
import { ConnListener } from "./_conn_listener.ts";
import type { Listener, Transport } from "./types.ts";

// The types this module's API shows, so that its documentation is complete on its own.
export type { Listener, Transport };

/**
 * The longest Unix socket path the OS accepts, in bytes: `sun_path` holds 108 bytes on Linux
 * and 104 on macOS and the BSDs, including the terminating NUL.
 */
export const MAX_UNIX_PATH_BYTES: number = Deno.build.os === "linux" ? 107 : 103;

/**
 * Listens on a Unix socket at `path`.
 *
 * The socket is bound inside a fresh private directory (mode 0700) next to `path`, made
 * mode 0600, and renamed onto `path`: no other user can connect in between, and an existing
 * stale file is replaced atomically. If that private path would be too long, the socket is
 * bound at `path` directly and made 0600 at once (owner-only under the usual umask).
 *
 * A file already at `path` is handled by probing it: if a live listener answers, this
 * throws `Deno.errors.AddrInUse` and leaves it alone; if nothing answers (its process died),
 * it is replaced; if it is not a socket, this throws `Deno.errors.AlreadyExists`.
 *
 * Closing the listener removes the file, unless another listener has replaced it since.
 *
 * @param path Where the socket file goes (at most {@linkcode MAX_UNIX_PATH_BYTES} bytes).
 * @returns A listener; iterate it to accept, `close()` it to stop.
 * @throws {RangeError} When `path` is longer than {@linkcode MAX_UNIX_PATH_BYTES}.
 * @throws {Deno.errors.AddrInUse} When a live listener serves `path`.
 * @throws {Deno.errors.AlreadyExists} When `path` exists and is not a socket.
 *
 * @example
 * ```ts
 * import { listenUnix } from "@conduit/ipc/transports/unix";
 * import assert from "node:assert/strict";
 *
 * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
 * const listener = await listenUnix(`${dir}/app.sock`);
 * assert.equal((await Deno.lstat(`${dir}/app.sock`)).mode! & 0o777, 0o600);
 * await listener.close();
 * await assert.rejects(Deno.lstat(`${dir}/app.sock`), Deno.errors.NotFound);
 * await Deno.remove(dir);
 * ```
 */
export async function listenUnix(path: string): Promise<Listener> {
  assertPathFits(path);
  await clearStaleSocket(path);
  const dir = dirname(path);
  const privateDir = await Deno.makeTempDir({ dir, prefix: "." });
  const bindPath = `${privateDir}/s`;
  let listener: Deno.Listener<Deno.UnixConn>;
  try {
    if (byteLength(bindPath) <= MAX_UNIX_PATH_BYTES) {
      listener = Deno.listen({ transport: "unix", path: bindPath });
      try {
        await Deno.chmod(bindPath, 0o600);
        await Deno.rename(bindPath, path);
      } catch (error) {
        listener.close();
        throw error;
      }
    } else {
      listener = Deno.listen({ transport: "unix", path });
      try {
        await Deno.chmod(path, 0o600);
      } catch (error) {
        listener.close();
        throw error;
      }
    }
  } finally {
    await Deno.remove(privateDir, { recursive: true });
  }
  const { ino } = await Deno.lstat(path);
  return new ConnListener(
    listener,
    (conn) => connTransport(conn, `Unix socket ${path}`),
    { addr: { transport: "unix", path }, onClose: () => removeIfOurs(path, ino) },
  );
}

/**
 * Connects to a Unix socket.
 *
 * @param path The socket file.
 * @returns The connected transport.
 * @throws {Deno.errors.NotFound} When there is no file at `path`.
 * @throws {Deno.errors.ConnectionRefused} When nothing listens on it any more.
 *
 * @example
 * ```ts
 * import { connectUnix, listenUnix } from "@conduit/ipc/transports/unix";
 * import assert from "node:assert/strict";
 *
 * const dir = await Deno.makeTempDir({ dir: "/tmp", prefix: "cd" });
 * const listener = await listenUnix(`${dir}/app.sock`);
 * const accepted = listener.accept();
 * const client = await connectUnix(`${dir}/app.sock`);
 * const server = await accepted;
 * await client.writable.getWriter().write(new Uint8Array([7]));
 * const { value } = await server.readable.getReader().read();
 * assert.deepEqual(value, new Uint8Array([7]));
 * await client.close();
 * await server.close();
 * await listener.close();
 * await Deno.remove(dir);
 * ```
 */
export async function connectUnix(path: string): Promise<Transport> {
  const conn = await Deno.connect({ transport: "unix", path });
  return connTransport(conn, `Unix socket ${path}`);
}

function assertPathFits(path: string): void {
  const bytes = byteLength(path);
  if (bytes > MAX_UNIX_PATH_BYTES) {
    throw new RangeError(
      `Unix socket path is ${bytes} bytes, more than the ${MAX_UNIX_PATH_BYTES} this OS allows: ${path}`,
    );
  }
}

/** Makes way for a new listener at `path`, or throws if it must not be touched. */
async function clearStaleSocket(path: string): Promise<void> {
  let info: Deno.FileInfo;
  try {
    info = await Deno.lstat(path);
  } catch (error) {
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  if (!info.isSocket) {
    throw new Deno.errors.AlreadyExists(`Cannot listen on ${path}: it exists and is not a socket`);
  }
  let probe: Deno.UnixConn;
  try {
    probe = await Deno.connect({ transport: "unix", path });
  } catch (error) {
    // Refused: the process that bound it is gone, so the file is stale.
    if (error instanceof Deno.errors.ConnectionRefused) return await removeIfPresent(path);
    if (error instanceof Deno.errors.NotFound) return;
    throw error;
  }
  probe.close();
  throw new Deno.errors.AddrInUse(`Cannot listen on ${path}: a live listener serves it`);
}

async function removeIfPresent(path: string): Promise<void> {
  try {
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Removes the socket file unless it is gone or another listener's file replaced it. */
async function removeIfOurs(path: string, ino: number | null): Promise<void> {
  try {
    if ((await Deno.lstat(path)).ino !== ino) return;
    await Deno.remove(path);
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

function dirname(path: string): string {
  const slash = path.lastIndexOf("/");
  if (slash < 0) return ".";
  return slash === 0 ? "/" : path.slice(0, slash);
}

function byteLength(text: string): number {
  return new TextEncoder().encode(text).length;
}
