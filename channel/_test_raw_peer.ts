// A scripted peer for tests: speaks raw frames over a transport, so a test can send anything,
// valid or not, and see exactly what the channel answers.

import { encodeFrame, FrameDecoder } from "../framing/frame_decoder.ts";
import type { Transport } from "../transports/types.ts";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "../protocol/envelope.ts";
import { jsonCodec } from "../codecs/json.ts";
import { memory } from "../transports/_test_pairs.ts";
import { Channel, type ChannelOptions } from "./channel.ts";

const utf8 = new TextEncoder();

/** The HELLO body a conforming JSON peer sends. */
export function helloBody(overrides: Record<string, unknown> = {}): Uint8Array {
  return utf8.encode(JSON.stringify({
    protocol: "conduit",
    version: 1,
    codec: "json",
    maxFrameBytes: 1 << 20,
    maxInFlight: 1024,
    streamWindowBytes: 1 << 16,
    features: [],
    ...overrides,
  }));
}

/** JSON bytes of `value`. */
export function json(value: unknown): Uint8Array {
  return utf8.encode(JSON.stringify(value));
}

/** A peer that sends and receives raw frames. */
export class RawPeer {
  readonly #transport: Transport;
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #frames: Envelope[] = [];
  #waiter: (() => void) | undefined;
  #ended = false;
  readonly #reading: Promise<void>;

  constructor(transport: Transport) {
    this.#transport = transport;
    this.#writer = transport.writable.getWriter();
    this.#writer.closed.catch(() => {});
    this.#reading = this.#read();
  }

  /** Sends one envelope as a frame. */
  send(envelope: Envelope): Promise<void> {
    return this.sendBytes(encodeFrame(encodeEnvelope(envelope)));
  }

  /** Sends raw bytes, framed or not. */
  sendBytes(bytes: Uint8Array): Promise<void> {
    return this.#writer.write(bytes).catch(() => {});
  }

  /** Sends HELLO and waits for the channel's. */
  async handshake(overrides: Record<string, unknown> = {}): Promise<Envelope> {
    await this.send({ kind: "hello", body: helloBody(overrides) });
    const hello = await this.next();
    if (hello?.kind !== "hello") throw new Error(`expected HELLO, got ${hello?.kind}`);
    return hello;
  }

  /** The next frame from the channel, or undefined once its side has closed. */
  async next(): Promise<Envelope | undefined> {
    while (this.#frames.length === 0) {
      if (this.#ended) return undefined;
      await new Promise<void>((resolve) => this.#waiter = resolve);
    }
    return this.#frames.shift();
  }

  /** Reads frames until one of `kind` arrives (undefined at the end). */
  async nextOf<K extends Envelope["kind"]>(
    kind: K,
  ): Promise<Extract<Envelope, { kind: K }> | undefined> {
    for (;;) {
      const frame = await this.next();
      if (frame === undefined) return undefined;
      if (frame.kind === kind) return frame as Extract<Envelope, { kind: K }>;
    }
  }

  /** Reads until the channel's GOODBYE and returns its body as an object. */
  async goodbye(): Promise<Record<string, unknown>> {
    const frame = await this.nextOf("goodbye");
    if (frame === undefined) throw new Error("the channel closed without GOODBYE");
    return frame.body.length === 0 ? {} : JSON.parse(new TextDecoder().decode(frame.body));
  }

  /** Waits until the channel's side of the transport has ended. */
  async ended(): Promise<void> {
    while (await this.next() !== undefined) { /* drain */ }
  }

  /** Closes the transport and waits for the reader to stop. */
  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#transport.close().catch(() => {});
    await this.#reading;
  }

  async #read(): Promise<void> {
    const reader = this.#transport.readable.getReader();
    const decoder = new FrameDecoder();
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        decoder.push(value);
        let frame: Uint8Array | undefined;
        while ((frame = decoder.next()) !== undefined) {
          this.#frames.push(decodeEnvelope(frame.slice()));
        }
        this.#wake();
      }
    } catch {
      // The transport failed: the same as its end for a test.
    } finally {
      this.#ended = true;
      this.#wake();
      reader.releaseLock();
    }
  }

  #wake(): void {
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.();
  }
}

/**
 * A channel over a memory pair whose other end is a RawPeer: the test plays the peer frame by
 * frame. Disposing it closes both and removes the pair.
 */
export async function scripted(options: Partial<ChannelOptions> = {}): Promise<Scripted> {
  const pair = await memory.pair();
  const peer = new RawPeer(pair.b);
  const channel = new Channel<Record<string, (param: unknown) => unknown>>(pair.a, {
    codec: jsonCodec(),
    ...options,
  });
  channel.opened.catch(() => {});
  return {
    peer,
    channel,
    async [Symbol.asyncDispose]() {
      await peer.close();
      await channel.close();
      await pair.cleanup();
    },
  };
}

/** What {@linkcode scripted} returns. */
export interface Scripted extends AsyncDisposable {
  readonly peer: RawPeer;
  readonly channel: Channel<Record<string, (param: unknown) => unknown>>;
}
