// The parent's side of every approach the report compares, behind one interface, so the same
// measuring code drives conduit, raw frames, NDJSON, fork IPC and a Web Worker.

import { fork } from "node:child_process";
import { type Channel, type MethodCodec, openChannel } from "../../channel/channel.ts";
import { jsonCodec } from "../../codecs/json.ts";
import { FrameDecoder, FrameWriter } from "../../framing/mod.ts";
import { type BenchApi, REPORT_MAX_FRAME_BYTES } from "./_bench_api.ts";
import type { Peer } from "../_peers.ts";
import { lines } from "./children/_lines.ts";
import { OP_COUNT, OP_SOURCE } from "./children/raw_frame_echo.ts";

/** One peer that echoes, counts notifications, and can be closed. */
export interface EchoClient {
  /** The peer process's id, for its peak RSS; undefined for an in-process peer. */
  readonly pid: number | undefined;
  /** A round trip carrying a payload. */
  echo(value: unknown): Promise<unknown>;
  /** A round trip carrying a small message. */
  echoSmall(value: unknown): Promise<unknown>;
  /** A one-way message. */
  note(value: unknown): void;
  /** Resolves with the number of one-way messages the peer has seen, once it has seen them. */
  noted(): Promise<number>;
  /** Closes the connection and waits for the peer to exit. */
  close(): Promise<void>;
}

/** A conduit channel to a peer serving {@linkcode BenchApi}. */
export interface ConduitClient extends EchoClient {
  readonly channel: Channel<BenchApi>;
}

/** Opens a channel to `peer` with the method codecs of the codec under test. */
export async function conduitClient(
  peer: Peer,
  methodCodecs: Record<string, MethodCodec>,
): Promise<ConduitClient> {
  const channel = await openChannel<BenchApi>(peer.transport, {
    codec: jsonCodec(),
    methodCodecs,
    maxFrameBytes: REPORT_MAX_FRAME_BYTES,
    defaultTimeout: Infinity,
  });
  const remote = channel.remote;
  return {
    channel,
    pid: peer.pid,
    echo: (value) => remote.echo(value),
    echoSmall: (value) => remote.echoSmall(value),
    note: (value) => channel.notify("note", value),
    noted: () => remote.noted(),
    async close() {
      await channel.close();
      await peer.close();
    },
  };
}

/**
 * Length-prefixed frames to `children/raw_frame_echo.ts`: conduit's transport and framing
 * with no codec or protocol. Values are `Uint8Array`s; answers come back in order.
 */
export class RawFrameClient implements EchoClient {
  readonly pid: number;
  readonly #peer: Peer;
  readonly #writer: FrameWriter;
  readonly #reading: Promise<void>;
  #waiters: Array<(frame: Uint8Array) => void> = [];
  #sourceLeft = 0;
  #sourceBytes = 0;
  #sourceDone: (() => void) | undefined;

  constructor(peer: Peer) {
    this.#peer = peer;
    this.pid = peer.pid;
    this.#writer = new FrameWriter(peer.transport.writable);
    this.#reading = this.#read(peer.transport.readable);
  }

  echo(value: unknown): Promise<Uint8Array> {
    this.#writer.write(value as Uint8Array);
    return new Promise((resolve) => this.#waiters.push(resolve));
  }

  echoSmall(value: unknown): Promise<Uint8Array> {
    return this.echo(value);
  }

  /** `value` must start with `OP_SINK`. */
  note(value: unknown): void {
    this.#writer.write(value as Uint8Array);
  }

  async noted(): Promise<number> {
    const answer = await this.echo(new Uint8Array([OP_COUNT]));
    return new DataView(answer.buffer, answer.byteOffset, answer.byteLength).getUint32(0);
  }

  /** Has the peer send `count` frames of `bytes` bytes; resolves with the bytes received. */
  source(count: number, bytes: number): Promise<number> {
    const request = new Uint8Array(9);
    const view = new DataView(request.buffer);
    request[0] = OP_SOURCE;
    view.setUint32(1, count);
    view.setUint32(5, bytes);
    this.#sourceLeft = count;
    this.#sourceBytes = 0;
    const done = new Promise<void>((resolve) => this.#sourceDone = resolve);
    this.#writer.write(request);
    return done.then(() => this.#sourceBytes);
  }

  async close(): Promise<void> {
    await this.#writer.close().catch(() => {});
    await this.#reading;
    await this.#peer.close();
  }

  async #read(readable: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new FrameDecoder({ maxFrameBytes: REPORT_MAX_FRAME_BYTES });
    for await (const chunk of readable) {
      decoder.push(chunk);
      for (let frame = decoder.next(); frame !== undefined; frame = decoder.next()) {
        if (this.#sourceLeft > 0) {
          this.#sourceBytes += frame.length;
          if (--this.#sourceLeft === 0) this.#sourceDone!();
        } else this.#waiters.shift()!(frame);
      }
    }
  }
}

const utf8 = new TextEncoder();

/**
 * A baseline that matches answers by id: requests are `{id, method, params}`, answers
 * `{id, result}`, a message without an id is a one-way note the peer counts.
 */
class IdClient implements EchoClient {
  #next = 1;
  readonly #waiting = new Map<number, (result: unknown) => void>();
  readonly #send: (message: object) => void;

  readonly pid: number | undefined;
  readonly close: () => Promise<void>;

  constructor(
    pid: number | undefined,
    send: (message: object) => void,
    close: () => Promise<void>,
  ) {
    this.pid = pid;
    this.#send = send;
    this.close = close;
  }

  /** Settles the request an answer is for. */
  answer(message: { id: number; result: unknown }): void {
    this.#waiting.get(message.id)?.(message.result);
    this.#waiting.delete(message.id);
  }

  echo(value: unknown): Promise<unknown> {
    return this.#request("echo", value);
  }

  echoSmall(value: unknown): Promise<unknown> {
    return this.#request("echo", value);
  }

  note(value: unknown): void {
    this.#send({ method: "note", params: value });
  }

  noted(): Promise<number> {
    return this.#request("noted", null) as Promise<number>;
  }

  #request(method: string, params: unknown): Promise<unknown> {
    const id = this.#next++;
    this.#send({ id, method, params });
    return new Promise((resolve) => this.#waiting.set(id, resolve));
  }
}

/** JSON lines over a child's stdin/stdout with plain Deno APIs: the classic way. */
export function ndjsonClient(script: URL): EchoClient {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", script.pathname],
    stdin: "piped",
    stdout: "piped",
    stderr: "inherit",
  }).spawn();
  const out = child.stdin.getWriter();
  const client = new IdClient(
    child.pid,
    (message) => out.write(utf8.encode(JSON.stringify(message) + "\n")).catch(fatal),
    async () => {
      await out.close();
      await reading;
      await child.status;
    },
  );
  const reading = (async () => {
    for await (const line of lines(child.stdout.pipeThrough(new TextDecoderStream()))) {
      client.answer(JSON.parse(line));
    }
  })();
  return client;
}

/** node:child_process `fork()` IPC, the child run by Deno's Node compatibility layer. */
export function forkClient(script: URL): EchoClient {
  const child = fork(script.pathname, [], { stdio: ["ignore", "inherit", "inherit", "ipc"] });
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const client = new IdClient(child.pid, (message) => child.send(message), async () => {
    child.disconnect();
    await exited;
  });
  child.on("message", (message: { id: number; result: unknown }) => client.answer(message));
  return client;
}

/** A Web Worker answering `postMessage` (structured clone), in this process. */
export function webWorkerClient(script: URL): EchoClient {
  const worker = new Worker(script, { type: "module" });
  const client = new IdClient(undefined, (message) => worker.postMessage(message), () => {
    worker.terminate();
    return Promise.resolve();
  });
  worker.onmessage = (event) => client.answer(event.data);
  worker.onerror = (event) => fatal(event.error ?? event.message);
  return client;
}

function fatal(error: unknown): void {
  console.error("bench/report: a baseline peer failed:", error);
  Deno.exit(1);
}
