// The pool's queue of calls waiting for a worker: first in, first out, with a retried call
// put back at the front. A call aborted while it waits stays in the array until it reaches
// the front (removing it from the middle would cost a copy), but stops counting as waiting.

/** A FIFO of items that may be settled (`done`) while they wait. */
export class CallQueue<T extends { readonly done: boolean }> {
  /** Items still waiting (settled ones excluded). */
  waiting = 0;
  #items: T[] = [];
  #head = 0;

  /** Adds `item` at the back. */
  push(item: T): void {
    this.#items.push(item);
    this.waiting++;
  }

  /** Adds `item` at the front. */
  pushFront(item: T): void {
    this.#items.splice(this.#head, 0, item);
    this.waiting++;
  }

  /** The first item still waiting, left in place; settled items before it are dropped. */
  peek(): T | undefined {
    const items = this.#items;
    while (this.#head < items.length && items[this.#head].done) this.#head++;
    return items[this.#head];
  }

  /** Takes the item {@linkcode peek} returned. */
  take(): void {
    this.#head++;
    this.waiting--;
  }

  /** An item settled while waiting (it is dropped when it reaches the front). */
  cancelled(): void {
    this.waiting--;
  }

  /** Releases the memory of taken items, now and then (amortised O(1) per item). */
  compact(): void {
    if (this.#head === this.#items.length) {
      this.#items = [];
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
  }

  /** Empties the queue, returning the items still waiting. */
  clear(): T[] {
    const left = this.#items.slice(this.#head).filter((item) => !item.done);
    this.#items = [];
    this.#head = 0;
    this.waiting = 0;
    return left;
  }
}
