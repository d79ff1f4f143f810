// A transport for tests that must see exactly when the channel writes: the test delivers the
// peer's frames, and the sink reports every frame the channel writes, synchronously, as it is
// written. The sink can be held, so that writes stay in flight until released.

import { encodeFrame, FrameDecoder } from "../framing/frame_decoder.ts";
import type { Transport } from "../transports/types.ts";
import { rawCodec } from "../codecs/raw.ts";
import { type Channel, openChannel } from "./channel.ts";
import { helloBody } from "./_test_raw_peer.ts";
import { decodeEnvelope, encodeEnvelope, type Envelope } from "../protocol/envelope.ts";

/** A transport fed by the test, whose sink calls `onWrite` with the frames of each write. */
export class ScriptedTransport implements Transport {
  readonly readable: ReadableStream<Uint8Array>;
  readonly writable: WritableStream<Uint8Array>;
  #controller!: ReadableStreamDefaultController<Uint8Array>;
  #held: PromiseWithResolvers<void> | undefined;
  #open = true;

  /** @param onWrite Gets the frames of each write (copies: they may be kept). */
  constructor(onWrite: (frames: Envelope[]) => void) {
    this.readable = new ReadableStream({ start: (c) => void (this.#controller = c) });
    const decoder = new FrameDecoder({ maxFrameBytes: 0xffff_ffff });
    this.writable = new WritableStream({
      write: (chunk) => {
        decoder.push(chunk);
        const frames: Envelope[] = [];
        for (let f = decoder.next(); f !== undefined; f = decoder.next()) {
          frames.push(decodeEnvelope(f.slice()));
        }
        onWrite(frames);
        return this.#held?.promise;
      },
    });
  }

  /** Delivers `envelopes` to the channel as one read. */
  deliver(envelopes: Envelope[]): void {
    const frames = envelopes.map((e) => encodeFrame(encodeEnvelope(e)));
    const chunk = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
    let offset = 0;
    for (const frame of frames) {
      chunk.set(frame, offset);
      offset += frame.length;
    }
    this.#controller.enqueue(chunk);
  }

  /** Writes from now on stay in flight until {@linkcode release}. */
  hold(): void {
    this.#held ??= Promise.withResolvers();
  }

  /** Completes the writes in flight; later ones complete at once. */
  release(): void {
    this.#held?.resolve();
    this.#held = undefined;
  }

  close(): Promise<void> {
    this.release();
    if (this.#open) {
      this.#open = false;
      this.#controller.close();
    }
    return Promise.resolve();
  }

  abort(): Promise<void> {
    return this.close();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }
}

/**
 * A raw-codec channel over a ScriptedTransport past its handshake, with its writes held
 * (`transport.hold()`): `written` gets every frame the channel writes once released.
 */
export async function heldRawChannel(): Promise<{
  channel: Channel<{ sum(bytes: Uint8Array): number }>;
  transport: ScriptedTransport;
  written: Envelope[];
}> {
  const written: Envelope[] = [];
  const transport = new ScriptedTransport((frames) => written.push(...frames));
  const opening = openChannel<{ sum(bytes: Uint8Array): number }>(transport, {
    codec: rawCodec(),
  });
  transport.deliver([{ kind: "hello", body: helloBody({ codec: "raw" }) }]);
  const channel = await opening;
  transport.hold();
  return { channel, transport, written };
}
