/**
 * Unix domain socket transports: {@linkcode listenUnix} and {@linkcode connectUnix}.
 *
 * The socket file is owner-only (mode 0600) from the moment it is reachable, a stale file
 * left by a dead process is replaced, a live listener's file is never taken over (of racing
 * listens on one path exactly one wins), and the file is removed when the listener closes.
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

import { onDeno, runtimeOs } from "../_runtime.ts";
import { utf8Length } from "../_utf8.ts";
import { ConnListener, connTransport } from "./_conn_transport.ts";
import type { Listener, Transport } from "./types.ts";

// The types this module's API shows, so that its documentation is complete on its own.
export type { Listener, Transport };

/**
 * The longest Unix socket path the OS accepts, in bytes: `sun_path` holds 108 bytes on Linux
 * and 104 on macOS and the BSDs, including the terminating NUL.
 */
export const MAX_UNIX_PATH_BYTES: number = runtimeOs() === "linux" ? 107 : 103;

/**
 * Listens on a Unix socket at `path`.
 *
 * The socket is bound inside a fresh private directory (mode 0700) next to `path`, made
 * mode 0600, and hard-linked onto `path`: no other user can connect in between. If that
 * private path would be too long, or the process may only use `path` itself (Deno grants
 * Unix sockets by exact path: `--allow-net=unix:<path>`), the socket is bound at `path`
 * directly and made 0600 at once (owner-only under the usual umask).
 *
 * Taking `path` is atomic: of several listens on one path, in one process or many, exactly
 * one wins and the others throw `Deno.errors.AddrInUse`. A file already at `path` is probed:
 * if a live listener answers (the probe is a connection it sees close at once), this throws
 * `Deno.errors.AddrInUse` and leaves it alone; if nothing answers (its process died), it is
 * replaced, under a lock on the directory so that racing listens never remove each other's
 * socket; if it is not a socket, this throws `Deno.errors.AlreadyExists`.
 *
 * Closing the listener removes the file, unless another listener has replaced it since.
 *
 * Permissions: read and write on the socket's directory, and `--allow-net=unix:<path>`.
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
 * await assert.rejects(listenUnix(`${dir}/app.sock`), Deno.errors.AddrInUse);
 * await listener.close();
 * await assert.rejects(Deno.lstat(`${dir}/app.sock`), Deno.errors.NotFound);
 * await Deno.remove(dir);
 * ```
 */
export async function listenUnix(path: string): Promise<Listener> {
  assertPathFits(path);
  if (!onDeno()) return (await import("./_node_socket.ts")).nodeListenUnix(path);
  let listener: Deno.Listener<Deno.UnixConn> | undefined;
  // A stale file removed by us can be taken by another listen before we bind: then we probe
  // again, and find its listener live.
  while ((listener = await bindUnlessTaken(path)) === undefined) await clearStaleSocket(path);
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
  if (!onDeno()) return (await import("./_node_socket.ts")).nodeConnectUnix(path);
  const conn = await Deno.connect({ transport: "unix", path });
  return connTransport(conn, `Unix socket ${path}`);
}

function assertPathFits(path: string): void {
  const bytes = utf8Length(path);
  if (bytes > MAX_UNIX_PATH_BYTES) {
    throw new RangeError(
      `Unix socket path is ${bytes} bytes, more than the ${MAX_UNIX_PATH_BYTES} this OS allows: ${path}`,
    );
  }
}

/**
 * Binds a socket owner-only and puts it at `path`, or returns undefined when a file is there
 * already. Both routes fail on an existing file (link and bind do), so this never replaces one.
 */
async function bindUnlessTaken(path: string): Promise<Deno.Listener<Deno.UnixConn> | undefined> {
  const privateDir = await Deno.makeTempDir({ dir: dirname(path), prefix: "." });
  try {
    const bindPath = `${privateDir}/s`;
    const listener = utf8Length(bindPath) <= MAX_UNIX_PATH_BYTES
      ? listenIfGranted(bindPath)
      : undefined;
    if (listener === undefined) return bindInPlace(path);
    try {
      await Deno.chmod(bindPath, 0o600);
      await Deno.link(bindPath, path);
    } catch (error) {
      listener.close();
      if (error instanceof Deno.errors.AlreadyExists) return undefined;
      throw error;
    }
    return listener;
  } finally {
    await Deno.remove(privateDir, { recursive: true });
  }
}

/** Listens at a private path, or returns undefined when the process may only use others. */
function listenIfGranted(path: string): Deno.Listener<Deno.UnixConn> | undefined {
  try {
    return Deno.listen({ transport: "unix", path });
  } catch (error) {
    if (error instanceof Deno.errors.NotCapable) return undefined;
    throw error;
  }
}

async function bindInPlace(path: string): Promise<Deno.Listener<Deno.UnixConn> | undefined> {
  let listener: Deno.Listener<Deno.UnixConn>;
  try {
    listener = Deno.listen({ transport: "unix", path });
  } catch (error) {
    if (error instanceof Deno.errors.AddrInUse) return undefined;
    throw error;
  }
  try {
    await Deno.chmod(path, 0o600);
  } catch (error) {
    listener.close();
    throw error;
  }
  return listener;
}

/**
 * Removes the file at `path` if it is a socket nobody listens on, or throws if it must not be
 * touched. Removal happens under an exclusive lock on the directory, which every remover of a
 * socket file here takes: a racing listen cannot remove the socket another one just bound.
 */
async function clearStaleSocket(path: string): Promise<void> {
  await underDirectoryLock(path, async () => {
    let info: Deno.FileInfo;
    try {
      info = await Deno.lstat(path);
    } catch (error) {
      if (error instanceof Deno.errors.NotFound) return;
      throw error;
    }
    if (!info.isSocket) {
      throw new Deno.errors.AlreadyExists(
        `Cannot listen on ${path}: it exists and is not a socket`,
      );
    }
    let probe: Deno.UnixConn | undefined;
    try {
      probe = await Deno.connect({ transport: "unix", path });
    } catch (error) {
      // Refused: the process that bound it is gone, so the file is stale.
      if (error instanceof Deno.errors.ConnectionRefused) return await removeIfPresent(path);
      if (error instanceof Deno.errors.NotFound) return;
      // A full backlog: a live listener that does not accept fast enough.
      if (!(error instanceof Deno.errors.WouldBlock)) throw error;
    }
    probe?.close();
    throw new Deno.errors.AddrInUse(`Cannot listen on ${path}: a live listener serves it`);
  });
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
    // The directory may be gone, and the file with it.
    await underDirectoryLock(path, async () => {
      if ((await Deno.lstat(path)).ino === ino) await Deno.remove(path);
    });
  } catch (error) {
    if (!(error instanceof Deno.errors.NotFound)) throw error;
  }
}

/** Runs `fn` holding an exclusive `flock` on the directory of `path` (released on close). */
async function underDirectoryLock(path: string, fn: () => Promise<void>): Promise<void> {
  const directory = await Deno.open(dirname(path), { read: true });
  try {
    await directory.lock(true);
    await fn();
  } finally {
    directory.close();
  }
}

function dirname(path: string): string {
  const slash = path.lastIndexOf("/");
  if (slash < 0) return ".";
  return slash === 0 ? "/" : path.slice(0, slash);
}
