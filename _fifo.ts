// A first-in, first-out queue on a ring of slots: push, peek and shift are O(1), where an
// array's shift() moves every element left once the array is too large for V8 to trim in
// place (quadratic over a long queue). The ring is allocated on the first push, doubles when
// full and is let go once the queue empties, so an idle queue holds nothing.

/** The ring's first size (a power of two). */
const MIN_SLOTS = 8;

/** A FIFO queue, O(1) per operation. */
export class Fifo<T> {
  #slots: Array<T | undefined> = [];
  #head = 0;
  #length = 0;

  /** How many items are queued. */
  get length(): number {
    return this.#length;
  }

  /** Adds `item` at the back. */
  push(item: T): void {
    if (this.#length === this.#slots.length) this.#grow();
    this.#slots[(this.#head + this.#length) & (this.#slots.length - 1)] = item;
    this.#length++;
  }

  /** The item at the front, left in place; undefined when empty. */
  peek(): T | undefined {
    return this.#length === 0 ? undefined : this.#slots[this.#head];
  }

  /** Takes the item at the front; undefined when empty. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#slots[this.#head];
    if (--this.#length === 0) {
      this.clear();
    } else {
      this.#slots[this.#head] = undefined;
      this.#head = (this.#head + 1) & (this.#slots.length - 1);
    }
    return item;
  }

  /** Empties the queue and lets its ring go. */
  clear(): void {
    this.#slots = [];
    this.#head = 0;
    this.#length = 0;
  }

  /** Doubles the ring, its items moved to the front in order. */
  #grow(): void {
    const old = this.#slots;
    const size = old.length;
    const slots = new Array<T | undefined>(Math.max(MIN_SLOTS, size * 2)).fill(undefined);
    for (let i = 0; i < size; i++) slots[i] = old[(this.#head + i) & (size - 1)];
    this.#slots = slots;
    this.#head = 0;
  }
}
