// A Deno.Conn (Unix socket, TCP, TLS) as a ByteChannel, and a Deno.Listener as a Listener of
// Transports (ConnListener, below, on ListenerBase, which the NATS listener shares).
//
// It reads with `conn.read()` rather than `conn.readable`: reading `conn.readable` to its end
// closes the whole connection (deno#22258), which would break half-close; `conn.read()` into
// a reused buffer also spares the 64 KiB allocation the default stream reader makes per read.

import { TransportClosedError } from "../errors.ts";
import { type ByteChannel, ByteChannelTransport, ReadBuffer } from "./_byte_channel_transport.ts";
import type { Listener, Transport } from "./types.ts";
import { connectionGone } from "../_runtime.ts";

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
  bytesSent = 0;

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
    // A short write is rare but for large chunks to a slow reader: writeRest finishes it.
    return this.#conn.write(chunk).then((n) => {
      this.bytesSent += n;
      return n < chunk.length ? this.#writeRest(chunk, n) : undefined;
    });
  }

  async #writeRest(chunk: Uint8Array, written: number): Promise<void> {
    while (written < chunk.length) {
      const n = await this.#conn.write(chunk.subarray(written));
      written += n;
      this.bytesSent += n;
    }
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

// What every Listener shares: iteration until closed, an idempotent close() and disposal.

/** A Listener whose subclass supplies `accept()` and the release behind `close()`. */
export abstract class ListenerBase implements Listener {
  abstract readonly addr: Deno.Addr;
  #closing: Promise<void> | undefined;

  abstract accept(): Promise<Transport>;

  /** Stops accepting and releases what the listener holds; called once, by `close()`. */
  protected abstract release(): Promise<void>;

  /** Whether `close()` has been called. */
  protected get closing(): boolean {
    return this.#closing !== undefined;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Transport> {
    while (!this.closing) {
      let transport: Transport;
      try {
        transport = await this.accept();
      } catch (error) {
        // An accept the close ended ends the iteration; a connection that failed before it was
        // accepted (its peer reset it: Deno's NotConnected) is skipped, or one hostile client
        // would end every accept loop; any other failure is the caller's.
        if (this.closing) return;
        if (connectionGone(error)) continue;
        throw error;
      }
      yield transport;
    }
  }

  close(): Promise<void> {
    return this.#closing ??= this.release();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/** Turns each accepted connection into a Transport; runs `onClose` once the listener closed. */
export class ConnListener<C extends Deno.Conn> extends ListenerBase {
  readonly addr: Deno.Addr;
  readonly encryption: "none" | "tls" | undefined;
  readonly #listener: Deno.Listener<C>;
  readonly #wrap: (conn: C) => Transport;
  readonly #onClose: (() => Promise<void>) | undefined;
  readonly #accepting = new Set<Promise<C>>();

  constructor(
    listener: Deno.Listener<C>,
    wrap: (conn: C) => Transport,
    options: {
      addr?: Deno.Addr;
      encryption?: "none" | "tls";
      onClose?: () => Promise<void>;
    } = {},
  ) {
    super();
    this.#listener = listener;
    this.#wrap = wrap;
    this.addr = options.addr ?? listener.addr;
    this.encryption = options.encryption;
    this.#onClose = options.onClose;
  }

  async accept(): Promise<Transport> {
    if (this.closing) throw new TransportClosedError("The listener is closed");
    const accepting = this.#listener.accept();
    this.#accepting.add(accepting);
    let conn: C;
    try {
      conn = await accepting;
    } catch (cause) {
      if (this.closing) {
        throw new TransportClosedError("The listener is closed", { cause });
      }
      throw cause;
    } finally {
      this.#accepting.delete(accepting);
    }
    if (this.closing) {
      conn.close();
      throw new TransportClosedError("The listener is closed");
    }
    return this.#wrap(conn);
  }

  protected override async release(): Promise<void> {
    try {
      this.#listener.close();
    } catch {
      // Closed already.
    }
    // Let pending accepts settle, so no op outlives the listener.
    await Promise.all([...this.#accepting].map((accepting) => accepting.catch(() => {})));
    await this.#onClose?.();
  }
}
