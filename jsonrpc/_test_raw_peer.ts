// The other end of a JSON-RPC channel in tests: a raw peer that writes and reads JSON-RPC
// bytes, and a channel opened against it over a memory pair.

import { ContentLengthDecoderStream, NdjsonDecoderStream } from "../framing/mod.ts";
import { memoryPair } from "../transports/memory.ts";
import type { Transport } from "../transports/types.ts";
import { type JsonRpcOptions, openJsonRpc, type ProtocolError } from "./mod.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** The other end, speaking raw JSON-RPC. */
export class RawPeer {
  readonly #writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>;
  readonly #transport: Transport;
  readonly #contentLength: boolean;

  constructor(transport: Transport, framing: "ndjson" | "content-length") {
    this.#transport = transport;
    this.#contentLength = framing === "content-length";
    this.#writer = transport.writable.getWriter();
    this.#reader = transport.readable.pipeThrough(
      framing === "ndjson" ? new NdjsonDecoderStream() : new ContentLengthDecoderStream(),
    ).getReader();
  }

  /** Writes bytes as they are. */
  async raw(text: string): Promise<void> {
    await this.#writer.write(encoder.encode(text));
  }

  /** Writes one message, framed. */
  send(message: unknown): Promise<void> {
    const text = typeof message === "string" ? message : JSON.stringify(message);
    const bytes = encoder.encode(text);
    return this.raw(
      this.#contentLength ? `Content-Length: ${bytes.length}\r\n\r\n${text}` : `${text}\n`,
    );
  }

  /** The next message. */
  async next(): Promise<unknown> {
    const { value, done } = await this.#reader.read();
    if (done) throw new Error("the channel closed its side");
    return JSON.parse(decoder.decode(value));
  }

  /** Ends what this side writes, still reading (a half-close, as `printf … | server` does). */
  async endInput(): Promise<void> {
    await this.#writer.close();
  }

  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#reader.cancel().catch(() => {});
    await this.#transport.close();
  }
}

/** A channel opened with `options` against a raw peer; its protocol errors are collected. */
export async function setup<Remote extends object = Record<string, never>>(
  options: Partial<JsonRpcOptions> & { framing?: "ndjson" | "content-length" } = {},
) {
  const framing = options.framing ?? "ndjson";
  const [a, b] = memoryPair();
  const errors: ProtocolError[] = [];
  const channel = await openJsonRpc<Remote>(a, {
    onProtocolError: (error) => errors.push(error),
    ...options,
    framing,
  });
  const peer = new RawPeer(b, framing);
  return { channel, peer, errors };
}
