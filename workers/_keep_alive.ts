// Whether a worker keeps this program alive: always, unless unref() was called; then only
// while a call made through it is in flight, so an awaited call still gets its answer.

import type { Overseeable } from "../channel/_remote.ts";

/** A worker's hold on the event loop; `apply(true)` refs its resources, `false` unrefs them. */
export class KeepAlive {
  readonly #apply: (hold: boolean) => void;
  #unref = false;
  #calls = 0;
  #held = true;
  readonly #over = (): void => {
    this.#calls--;
    this.#update();
  };

  constructor(apply: (hold: boolean) => void) {
    this.#apply = apply;
  }

  ref(): void {
    this.#unref = false;
    this.#update();
  }

  unref(): void {
    this.#unref = true;
    this.#update();
  }

  /** Holds the program while `call` is in flight. */
  track(call: Overseeable): void {
    this.#calls++;
    this.#update();
    call.whenOver(this.#over);
  }

  #update(): void {
    const hold = !this.#unref || this.#calls > 0;
    if (hold === this.#held) return;
    this.#held = hold;
    this.#apply(hold);
  }
}

/** What unref(), ref() and `await using` do on a worker handle, process or thread alike. */
export abstract class HeldWorker implements AsyncDisposable {
  /** The worker's hold on the event loop. */
  protected abstract readonly keepAlive: KeepAlive;

  abstract close(): Promise<Deno.CommandStatus>;

  unref(): void {
    this.keepAlive.unref();
  }

  ref(): void {
    this.keepAlive.ref();
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close().then(() => {});
  }
}
