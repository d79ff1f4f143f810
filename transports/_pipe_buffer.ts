// Resizing a pipe's kernel buffer (Linux `fcntl(F_SETPIPE_SZ)`), which Deno has no API for,
// through libc by FFI. Only done where FFI is already granted: we never prompt, and without
// the permission (or off Linux) pipes keep the OS default of 64 KiB.
//
// Why it matters: the frame writer sends 64 KiB batches, so a 64 KiB pipe holds exactly one
// and the two processes move it in lock step (write, wait for the reader to empty the pipe,
// write again), with two or three thread wake-ups per batch on each side; a larger buffer
// lets the writer run ahead of the reader as a socket's buffers do.

const F_SETPIPE_SZ = 1031;
const F_GETPIPE_SZ = 1032;
// Linux values on x86-64 and arm64 (asm-generic).
const O_RDONLY = 0;
const O_NONBLOCK = 0o4000;
const O_CLOEXEC = 0o2000000;

const SYMBOLS = {
  open: { parameters: ["buffer", "i32"], result: "i32" },
  fcntl: { parameters: ["i32", "i32", "i32"], result: "i32" },
  close: { parameters: ["i32"], result: "i32" },
} as const;

/** An open file descriptor of ours, or a path to open (e.g. `/proc/<pid>/fd/0`). */
export type PipeRef = number | string;

/**
 * Bytes that cross a pipe before it is resized: 256 KiB, four default pipes full. A
 * transport that moves less keeps the default, so short-lived and idle ones cost no FFI call
 * at spawn and none of the user's pipe budget (`/proc/sys/fs/pipe-user-pages-soft`).
 */
export const RESIZE_AFTER_BYTES = 256 * 1024;

/** Resizes one pipe, once, after {@linkcode RESIZE_AFTER_BYTES} have crossed it. */
export class PipeResizer {
  readonly #pipe: PipeRef;
  readonly #bytes: number;
  #left: number;

  /**
   * @param pipe The pipe.
   * @param bytes The buffer size to ask for; 0 never resizes.
   */
  constructor(pipe: PipeRef, bytes: number) {
    this.#pipe = pipe;
    this.#bytes = bytes;
    this.#left = bytes > 0 ? RESIZE_AFTER_BYTES : 0;
  }

  /** Counts `bytes` more across the pipe. */
  count(bytes: number): void {
    if (this.#left > 0 && (this.#left -= bytes) <= 0) resizePipes([this.#pipe], this.#bytes);
  }

  /** Never resizes from now on (the pipe's path may name another process's pipe soon). */
  cancel(): void {
    this.#left = 0;
  }
}

/**
 * Asks the kernel for pipe buffers of `bytes` for each pipe in `pipes`, and returns their
 * sizes afterwards, or `undefined` when it cannot ask (no FFI permission, not Linux, no
 * glibc). A refused request (over `/proc/sys/fs/pipe-max-size`, over the user's pipe
 * budget) or a target that is not a pipe leaves that pipe as it was and reads as -1 or its
 * old size. Never throws.
 */
export function resizePipes(pipes: readonly PipeRef[], bytes: number): number[] | undefined {
  return withLibc((libc) =>
    pipes.map((pipe) =>
      onPipe(libc, pipe, (fd) => {
        if (bytes > 0) libc.fcntl(fd, F_SETPIPE_SZ, bytes);
        return libc.fcntl(fd, F_GETPIPE_SZ, 0);
      })
    )
  );
}

type Libc = Deno.DynamicLibrary<typeof SYMBOLS>["symbols"];

function withLibc<T>(use: (libc: Libc) => T): T | undefined {
  if (Deno.build.os !== "linux") return undefined;
  try {
    if (Deno.permissions.querySync({ name: "ffi" }).state !== "granted") return undefined;
    // Closed again at once: an open library is a resource that test sanitizers count.
    const library = Deno.dlopen("libc.so.6", SYMBOLS);
    try {
      return use(library.symbols);
    } finally {
      library.close();
    }
  } catch {
    return undefined;
  }
}

function onPipe(libc: Libc, pipe: PipeRef, use: (fd: number) => number): number {
  if (typeof pipe === "number") return use(pipe);
  // Read-only and non-blocking: opening a pipe this way never waits for a writer, and a
  // reader more or less changes nothing for the processes using it.
  const fd = libc.open(
    new TextEncoder().encode(`${pipe}\0`),
    O_RDONLY | O_NONBLOCK | O_CLOEXEC,
  );
  if (fd < 0) return -1;
  try {
    return use(fd);
  } finally {
    libc.close(fd);
  }
}
