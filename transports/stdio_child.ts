/**
 * The child's side of a stdio transport: {@linkcode stdioTransport} talks to the parent over
 * `Deno.stdin` and `Deno.stdout`. Re-exported by `@conduit/ipc/transports/stdio`.
 *
 * @module
 */

import { integerOption, numberOption } from "../_options.ts";
import { onDeno } from "../_runtime.ts";
import {
  type ByteChannel,
  ByteChannelTransport,
  PipeResizer,
  ReadBuffer,
  realStdout,
} from "./_byte_channel_transport.ts";
import type { Transport } from "./types.ts";

/**
 * The default {@linkcode StdioTransportOptions.syncWriteMaxBytes}: 65 KiB, one pipe buffer
 * and the 1 KiB of room the frame writer's batches have for headers (so that a reply with a
 * 64 KiB body is one synchronous write).
 *
 * In a child, `await Deno.stdout.write()` runs its syscall on a worker thread while
 * `Deno.stdout.writeSync()` runs it on the main thread. Synchronous small writes carry more
 * 64-byte frames/s from child to parent and make a 64-byte ping-pong faster
 * (`deno bench -A bench/transports_bench.ts`, "transport/stdio ping-pong 64B"). A
 * synchronous write blocks the child's event loop while the pipe is full (the parent not
 * reading), so it is kept to about one pipe buffer; larger chunks are written asynchronously, at the same speed.
 */
export const DEFAULT_SYNC_WRITE_MAX_BYTES: number = 65 * 1024;

/**
 * The default `pipeBufferBytes` of every stdio transport: 1 MiB, Linux's limit for an
 * unprivileged process (`/proc/sys/fs/pipe-max-size`).
 *
 * A pipe holds 64 KiB by default, exactly one of the frame writer's batches, so writer and
 * reader move each batch in lock step, with several thread wake-ups per batch. A 1 MiB pipe
 * takes the context switches per message near a Unix socket's; each one is a chance to wait
 * for a CPU on a busy machine (the report's raw notifications over stdio against unix,
 * bench/report/notes.md target 4).
 */
export const DEFAULT_PIPE_BUFFER_BYTES: number = 1024 * 1024;

/** Options for {@linkcode stdioTransport}. */
export interface StdioTransportOptions {
  /**
   * Chunks up to this many bytes are written to stdout synchronously; larger ones
   * asynchronously. `0` writes everything asynchronously.
   *
   * @default {DEFAULT_SYNC_WRITE_MAX_BYTES} (66560)
   */
  syncWriteMaxBytes?: number;
  /**
   * The kernel buffer to ask for on our stdin and on our stdout, when they are pipes, in
   * bytes, once 256 KiB have crossed that pipe; `0` never asks. Linux only, and only with FFI
   * permission (`--allow-ffi` or `-A`); see {@linkcode SpawnTransportOptions.pipeBufferBytes}.
   * Either side may ask, since both processes share a pipe: a child without FFI permission
   * still gets larger pipes from a parent that has it.
   *
   * @default {DEFAULT_PIPE_BUFFER_BYTES} (1 MiB)
   */
  pipeBufferBytes?: number;
}

/**
 * The child's side of a stdio transport: reads from `Deno.stdin`, writes to `Deno.stdout`
 * (the real one, where a conduit worker's start-up code pointed `Deno.stdout` at stderr).
 * Use it once per process, and write nothing else to stdout while it is open. Closing it
 * closes stdin and stdout; closing its `writable` closes stdout only. On Node and Bun the
 * parent's `readable` then ends while the parent can still write to us; on Deno it ends only
 * when this process exits, as Deno keeps a process's stdin and stdout open until then (a
 * channel over it ends by its GOODBYE, not by the end of the bytes).
 *
 * On Node and Bun it reads `process.stdin` and writes fd 1 itself (`process.stdout` may point
 * at stderr in a worker), with the same contract; `syncWriteMaxBytes` and `pipeBufferBytes`
 * are Deno's only there (docs/runtimes.md).
 *
 * @param options Write strategy; see {@linkcode StdioTransportOptions}.
 * @returns The transport to the parent.
 *
 * @example A Deno child that echoes to its parent
 * ```ts
 * import { spawnTransport } from "@conduit/ipc/transports/stdio";
 * import assert from "node:assert/strict";
 *
 * // The child's program: echo everything until the parent closes our stdin.
 * const program = `
 *   import { stdioTransport } from "@conduit/ipc/transports/stdio";
 *   const transport = stdioTransport();
 *   await transport.readable.pipeTo(transport.writable);
 *   await transport.close();
 * `;
 * await using child = spawnTransport(Deno.execPath(), { args: ["eval", program] });
 * const writer = child.writable.getWriter();
 * await writer.write(new TextEncoder().encode("ping"));
 * await writer.close();
 * assert.equal(await new Response(child.readable).text(), "ping");
 * ```
 */
export function stdioTransport(options: StdioTransportOptions = {}): Transport {
  const syncWriteMaxBytes = numberOption(
    "syncWriteMaxBytes",
    options.syncWriteMaxBytes ?? DEFAULT_SYNC_WRITE_MAX_BYTES,
    0,
  );
  const pipeBufferBytes = integerOption(
    "pipeBufferBytes",
    options.pipeBufferBytes ?? DEFAULT_PIPE_BUFFER_BYTES,
    0,
  );
  return new ByteChannelTransport(
    onDeno() ? new StdioChannel(syncWriteMaxBytes, pipeBufferBytes) : new NodeStdio(),
  );
}

/**
 * Off Deno: `transports/_node_stdio.ts`'s channel, loaded at the first use (so Deno never
 * loads it); each method waits for the load once, then goes straight to the channel.
 */
class NodeStdio implements ByteChannel {
  readonly label = "this process's stdio";
  #channel: ByteChannel | undefined;
  readonly #loading: Promise<ByteChannel> = import("./_node_stdio.ts").then(
    ({ NodeStdioChannel }) => this.#channel = new NodeStdioChannel(),
  );

  read(): Promise<Uint8Array | null> {
    return this.#channel?.read() ?? this.#loading.then((channel) => channel.read());
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    const channel = this.#channel;
    if (channel !== undefined) return channel.write(chunk);
    return this.#loading.then((channel) => channel.write(chunk));
  }

  closeWrite(): Promise<void> {
    return this.#loading.then((channel) => channel.closeWrite());
  }

  close(abortive: boolean): Promise<void> {
    return this.#loading.then((channel) => channel.close(abortive));
  }
}

class StdioChannel implements ByteChannel {
  readonly label = "this process's stdio";
  readonly #syncWriteMaxBytes: number;
  readonly #buffer = new ReadBuffer(undefined, true);
  readonly #stdinResizer: PipeResizer;
  readonly #stdoutResizer: PipeResizer;
  readonly #stdout = realStdout();
  /** The buffer the read in flight reads into (one read at a time). */
  #reading: Uint8Array | undefined;

  constructor(syncWriteMaxBytes: number, pipeBufferBytes: number) {
    this.#syncWriteMaxBytes = syncWriteMaxBytes;
    this.#stdinResizer = new PipeResizer(0, pipeBufferBytes);
    this.#stdoutResizer = new PipeResizer(1, pipeBufferBytes);
  }

  // Reads are thens, not async functions: one promise layer less per read, which a small
  // call pays once in the worker.
  read(): Promise<Uint8Array | null> {
    const buffer = this.#reading = this.#buffer.buffer;
    return Deno.stdin.read(buffer).then(this.#took);
  }

  readonly #took = (n: number | null): Uint8Array | null => {
    if (n === null) return null;
    this.#stdinResizer.count(n);
    return this.#buffer.take(this.#reading!.subarray(0, n));
  };

  readInto(view: Uint8Array): Promise<Uint8Array | null> {
    return Deno.stdin.read(view).then((n) => {
      if (n === null) return null;
      this.#stdinResizer.count(n);
      return view.subarray(0, n);
    });
  }

  write(chunk: Uint8Array): Promise<void> | undefined {
    this.#stdoutResizer.count(chunk.length);
    const stdout = this.#stdout;
    if (chunk.length > this.#syncWriteMaxBytes) return writeAllAsync(stdout, chunk);
    let written = stdout.writeSync(chunk);
    while (written < chunk.length) written += stdout.writeSync(chunk.subarray(written));
    return undefined;
  }

  closeWrite(): Promise<void> {
    closeQuietly(this.#stdout);
    return Promise.resolve();
  }

  close(): Promise<void> {
    // Closing stdin also settles a pending read (with Interrupted), so the process can exit.
    closeQuietly(Deno.stdin);
    closeQuietly(this.#stdout);
    return Promise.resolve();
  }
}

async function writeAllAsync(stdout: typeof Deno.stdout, chunk: Uint8Array): Promise<void> {
  let written = await stdout.write(chunk);
  while (written < chunk.length) written += await stdout.write(chunk.subarray(written));
}

function closeQuietly(resource: { close(): void }): void {
  try {
    resource.close();
  } catch {
    // Closed already.
  }
}
