// The child's side of the stdio transport on Node and Bun (transports/stdio_child.ts loads it
// only off Deno): reads `process.stdin`, writes the process's real fd 1 through a `net.Socket`
// of its own, which `process.stdout` never shares (a conduit worker points `process.stdout` at
// stderr, `nodeQuietStdout` in workers/worker_env.ts). The same contract as Deno's: bytes in
// order, backpressure both ways (a read queue that pauses stdin, writes settled once the
// runtime is done with the bytes), closing the writable closes fd 1 (the parent's reads end),
// and nothing keeps the process alive once closed.

import * as fs from "node:fs";
import * as net from "node:net";
import process from "node:process";
import type { Readable } from "node:stream";
import type { ByteChannel } from "./_byte_channel_transport.ts";
import { NodeReader } from "./_node_reader.ts";

/** Bytes read ahead of the reader before stdin is paused. */
const READ_AHEAD_BYTES = 256 * 1024;

/** Where the channel writes: the real fd 1. */
interface Stdout {
  /** Writes all of `chunk`; `undefined` when done and `chunk` is free again. */
  write(chunk: Uint8Array): Promise<void> | undefined;
  /** Writes what is queued, then closes fd 1 (the parent's reads end). */
  end(): Promise<void>;
  /** Closes fd 1 now. */
  destroy(): Promise<void>;
}

/** fd 1 through a `net.Socket` (a pipe or a socket) or a `fs.WriteStream` (a file): Node. */
class NodeStdout implements Stdout {
  readonly #stream: net.Socket | fs.WriteStream;
  readonly #closed: Promise<void>;
  #failure: Error | undefined;

  constructor() {
    let stream: net.Socket | fs.WriteStream;
    try {
      stream = new net.Socket({ fd: 1, readable: false, writable: true });
    } catch {
      // A file (`> out.bin`): a socket cannot wrap it.
      stream = fs.createWriteStream("", { fd: 1 });
    }
    this.#stream = stream;
    stream.on("error", (error: Error) => {
      this.#failure ??= error;
    });
    this.#closed = new Promise((resolve) =>
      stream.once("close", () => {
        // libuv never closes fds 0 to 2 when it closes their handle, and a pipe has no
        // half-close (the socket's shutdown fails there): the parent's reads end only once fd 1
        // is closed. (A file's stream closed fd 1 itself.)
        if (stream instanceof net.Socket) closeFd1();
        resolve();
      })
    );
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const stream = this.#stream;
    let settled: ((error?: Error | null) => void) | undefined;
    let done = false;
    let failure: Error | null | undefined;
    stream.write(chunk, (error?: Error | null) => {
      done = true;
      failure = error;
      settled?.(error);
    });
    if (done) return failure ? Promise.reject(failure) : undefined;
    // Nothing left in the stream's queue: the bytes went to the pipe at once, Node holds no
    // reference to `chunk` any more, and no promise is needed.
    if (stream.writableLength === 0 && !stream.destroyed) return undefined;
    return new Promise((resolve, reject) => {
      settled = (error) => error ? reject(error) : resolve();
    });
  }

  end(): Promise<void> {
    // Once every byte is out, close fd 1 (see the constructor).
    const stream = this.#stream;
    stream.end(() => stream.destroy());
    return this.#closed;
  }

  destroy(): Promise<void> {
    this.#stream.destroy();
    return this.#closed;
  }
}

/** Bun's file sink on fd 1 (Bun's `net.Socket` over a pipe fails a full pipe with EAGAIN). */
interface FileSink {
  write(chunk: Uint8Array): number;
  flush(): number | Promise<number>;
  end(): number | Promise<number>;
}

/** fd 1 through Bun's `FileSink`, which copies what it is given: Bun. */
class BunStdout implements Stdout {
  readonly #sink: FileSink;
  #closed = false;

  constructor(bun: { file(fd: number): { writer(options: object): FileSink } }) {
    this.#sink = bun.file(1).writer({ highWaterMark: 64 * 1024 });
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    this.#sink.write(chunk);
    const flushed = this.#sink.flush();
    return flushed instanceof Promise ? flushed.then(() => {}) : undefined;
  }

  async end(): Promise<void> {
    await this.#sink.end();
    this.destroy();
  }

  destroy(): Promise<void> {
    // The sink's end leaves fd 1 open; the parent's reads end only once it is closed.
    if (!this.#closed) closeFd1();
    this.#closed = true;
    return Promise.resolve();
  }
}

/** This process's stdin and real stdout as a ByteChannel (Node and Bun). */
export class NodeStdioChannel implements ByteChannel {
  readonly label = "this process's stdio";
  readonly #stdin: Readable = process.stdin;
  #stdout: Stdout | undefined;
  readonly #reader = new NodeReader(this.#stdin, READ_AHEAD_BYTES);

  /** The real fd 1, opened at the first write (a worker that never writes leaves it alone). */
  #out(): Stdout {
    const bun = (globalThis as { Bun?: ConstructorParameters<typeof BunStdout>[0] }).Bun;
    return this.#stdout ??= bun === undefined ? new NodeStdout() : new BunStdout(bun);
  }

  read(): Promise<Uint8Array | null> {
    return this.#reader.read();
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    return this.#out().write(chunk);
  }

  closeWrite(): Promise<void> {
    if (this.#stdout !== undefined) return this.#stdout.end();
    closeFd1();
    return Promise.resolve();
  }

  async close(): Promise<void> {
    // Destroying stdin releases its handle (and settles a pending read), so the process can
    // exit; it ends the read direction for good.
    this.#stdin.destroy();
    this.#reader.end();
    if (this.#stdout !== undefined) await this.#stdout.destroy();
    else closeFd1();
  }
}

/** Closes fd 1, so that the parent's reads end. */
function closeFd1(): void {
  try {
    fs.closeSync(1);
  } catch {
    // Closed already.
  }
}

/**
 * Calls `onEnd` once stdin ends or fails (the parent is gone), reading and dropping whatever
 * comes; `stop()` stops watching and releases stdin.
 */
export function watchNodeStdin(onEnd: () => void): { stop(): void } {
  const stdin = process.stdin;
  let stopped = false;
  const ended = () => {
    if (stopped) return;
    stopped = true;
    onEnd();
  };
  stdin.on("data", () => {});
  stdin.once("end", ended);
  stdin.once("error", ended);
  stdin.once("close", ended);
  return {
    stop() {
      stopped = true;
      stdin.destroy();
    },
  };
}
