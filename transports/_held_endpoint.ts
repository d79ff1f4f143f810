// The parent's side of a Worker, holding what it posts until the worker listens. Deno drops a
// message that reaches a worker before it has a message listener (while its module loads, or
// awaits at its top level before it creates its transport), and a dropped HELLO broke the
// handshake ("The first frame was CALL, not HELLO", workers/thread_worker_test.ts). The
// worker's end posts LISTENING once it listens (selfTransport); until that arrives, posts are
// kept in order, cloned now as a post would clone them (so a writer may reuse its buffer).

import { LISTENING, type MessageEndpoint } from "./_post_message_channel.ts";

export class HeldEndpoint implements MessageEndpoint {
  readonly #target: MessageEndpoint;
  #held: unknown[] | undefined = [];

  constructor(target: MessageEndpoint) {
    this.#target = target;
    target.addEventListener("message", this.#onMessage);
  }

  postMessage(message: unknown, transfer: Transferable[]): void {
    if (this.#held === undefined) this.#target.postMessage(message, transfer);
    else {this.#held.push(
        sharedOrNumber(message) ? message : structuredClone(message, { transfer }),
      );}
  }

  addEventListener(type: "message", listener: (event: MessageEvent) => void): void {
    this.#target.addEventListener(type, listener);
  }

  removeEventListener(type: "message", listener: (event: MessageEvent) => void): void {
    this.#target.removeEventListener(type, listener);
  }

  /**
   * The transport was released: stops waiting for LISTENING, unless posts are held (a close
   * whose writes and END the worker has not listened for yet), which still go once it listens.
   */
  release(): void {
    if (this.#held === undefined || this.#held.length === 0) this.#detach();
  }

  #detach(): void {
    this.#target.removeEventListener("message", this.#onMessage);
    this.#held = undefined;
  }

  readonly #onMessage = (event: MessageEvent): void => {
    if (event.data !== LISTENING || this.#held === undefined) return;
    const held = this.#held;
    this.#detach();
    for (const message of held) this.#target.postMessage(message, []);
  };
}

/** A number, or a view of shared memory: posted as it is (shared memory is meant to be shared). */
function sharedOrNumber(message: unknown): boolean {
  return typeof message === "number" ||
    (ArrayBuffer.isView(message) && message.buffer instanceof SharedArrayBuffer);
}
