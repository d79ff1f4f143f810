// A Deno.Conn (Unix socket, TCP, TLS) as a ByteChannel.
//
// It reads with `conn.read()` rather than `conn.readable`: reading `conn.readable` to its end
// closes the whole connection (deno#22258), which would break half-close; `conn.read()` into
// a reused buffer also spares the 64 KiB allocation the default stream reader makes per read.

import { type ByteChannel, ByteChannelTransport, ReadBuffer } from "./_byte_channel_transport.ts";
import type { Transport } from "./types.ts";

/** Wraps a connection in a Transport; `label` names it in error messages. */
export function connTransport(conn: Deno.Conn, label: string): Transport {
  const transport = new ByteChannelTransport(new ConnChannel(conn, label));
  // Transport.remoteAddr: who is on the other end, for a server's logs and allow-lists.
  return Object.defineProperty(transport, "remoteAddr", { value: conn.remoteAddr });
}

class ConnChannel implements ByteChannel {
  readonly label: string;
  readonly #conn: Deno.Conn;
  readonly #buffer = new ReadBuffer(undefined, true);
  /** The buffer the read in flight reads into (one read at a time). */
  #reading: Uint8Array | undefined;

  constructor(conn: Deno.Conn, label: string) {
    this.#conn = conn;
    this.label = label;
  }

  // Reads and writes are thens, not async functions: one promise layer less per read and
  // per write, which a small call pays on both sides (bench/report/_machine.ts, small).

  read(): Promise<Uint8Array | null> {
    const buffer = this.#reading = this.#buffer.buffer;
    return this.#conn.read(buffer).then(this.#took);
  }

  readonly #took = (n: number | null): Uint8Array | null =>
    n === null ? null : this.#buffer.take(this.#reading!.subarray(0, n));

  readInto(view: Uint8Array): Promise<Uint8Array | null> {
    return this.#conn.read(view).then((n) => n === null ? null : view.subarray(0, n));
  }

  write(chunk: Uint8Array): Promise<void> {
    // A short write is rare: writeRest finishes it.
    return this.#conn.write(chunk).then((n) =>
      n < chunk.length ? this.#writeRest(chunk, n) : undefined
    );
  }

  async #writeRest(chunk: Uint8Array, written: number): Promise<void> {
    while (written < chunk.length) written += await this.#conn.write(chunk.subarray(written));
  }

  freeBuffers(): void {
    this.#buffer.free();
  }

  closeWrite(): Promise<void> {
    return this.#conn.closeWrite();
  }

  close(): Promise<void> {
    try {
      this.#conn.close();
    } catch {
      // Closed already.
    }
    return Promise.resolve();
  }
}
