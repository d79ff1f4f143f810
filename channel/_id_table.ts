// The calls in flight, by id. Ids are handed out in increasing order (docs/protocol.md §5) and
// most calls finish before many more start, so a ring indexed by an id's low bits holds
// nearly all of them with no hashing and nothing allocated per call, where a Map churned by
// one insert and one delete per call rehashes into new tables again and again. A call still
// running when its slot comes round again waits in an overflow Map.

/** Something with a numeric id. */
interface HasId {
  readonly id: number;
}

/** A table of values by their (increasing) ids. */
export class IdTable<T extends HasId> {
  readonly #slots: Array<T | undefined>;
  readonly #mask: number;
  readonly #overflow = new Map<number, T>();
  #size = 0;

  /** @param capacity Slots in the ring, rounded up to a power of two (at least 16). */
  constructor(capacity: number) {
    let slots = 16;
    while (slots < capacity) slots *= 2;
    this.#slots = new Array<T | undefined>(slots).fill(undefined);
    this.#mask = slots - 1;
  }

  get size(): number {
    return this.#size;
  }

  get(id: number): T | undefined {
    const value = this.#slots[id & this.#mask];
    if (value !== undefined && value.id === id) return value;
    return this.#overflow.size === 0 ? undefined : this.#overflow.get(id);
  }

  /** Adds `value` under its id, which must not be in the table. */
  add(value: T): void {
    const index = value.id & this.#mask;
    if (this.#slots[index] === undefined) this.#slots[index] = value;
    else this.#overflow.set(value.id, value);
    this.#size++;
  }

  delete(id: number): void {
    const index = id & this.#mask;
    const value = this.#slots[index];
    if (value !== undefined && value.id === id) {
      this.#slots[index] = undefined;
      this.#size--;
    } else if (this.#overflow.delete(id)) {
      this.#size--;
    }
  }

  /** Every value; deleting while iterating is allowed. */
  *values(): IterableIterator<T> {
    // A connection that ends with nothing in flight (most hostile ones) skips the ring's scan.
    if (this.#size === 0) return;
    for (const value of this.#slots) if (value !== undefined) yield value;
    yield* this.#overflow.values();
  }

  clear(): void {
    this.#slots.fill(undefined);
    this.#overflow.clear();
    this.#size = 0;
  }
}
