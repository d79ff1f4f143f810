// A Deno.Conn (Unix socket, TCP, TLS) as a ByteChannel.
//
// It reads with `conn.read()` rather than `conn.readable`: reading `conn.readable` to its end
// closes the whole connection (deno#22258), which would break half-close; `conn.read()` into
// a reused buffer also spares the 64 KiB allocation the default stream reader makes per read.

import { type ByteChannel, ByteChannelTransport, ReadBuffer } from "./_byte_channel_transport.ts";
import type { Transport } from "./types.ts";

/** Wraps a connection in a Transport; `label` names it in error messages. */
export function connTransport(conn: Deno.Conn, label: string): Transport {
  return new ByteChannelTransport(new ConnChannel(conn, label));
}

class ConnChannel implements ByteChannel {
  readonly label: string;
  readonly #conn: Deno.Conn;
  readonly #buffer = new ReadBuffer(undefined, true);

  constructor(conn: Deno.Conn, label: string) {
    this.#conn = conn;
    this.label = label;
  }

  async read(): Promise<Uint8Array | null> {
    const buffer = this.#buffer.buffer;
    const n = await this.#conn.read(buffer);
    return n === null ? null : this.#buffer.take(buffer.subarray(0, n));
  }

  async readInto(view: Uint8Array): Promise<Uint8Array | null> {
    const n = await this.#conn.read(view);
    return n === null ? null : view.subarray(0, n);
  }

  async write(chunk: Uint8Array): Promise<void> {
    let written = await this.#conn.write(chunk);
    while (written < chunk.length) written += await this.#conn.write(chunk.subarray(written));
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
