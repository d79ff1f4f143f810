// The calls in flight, by id. Ids are handed out in increasing order (docs/protocol.md §5) and
// most calls finish before many more start, so a ring indexed by an id's low bits holds
// nearly all of them with no hashing and nothing allocated per call, where a Map churned by
// one insert and one delete per call rehashes into new tables again and again. A call still
// running when its slot comes round again waits in an overflow Map. The ring starts small and
// doubles, up to its capacity, when a slot it needs is taken: a connection that never has many
// calls in flight (or ends at once, as hostile ones do) never allocates the whole ring.

/** The ring's first size. */
const MIN_SLOTS = 16;

/** Something with a numeric id. */
interface HasId {
  readonly id: number;
}

/** A table of values by their (increasing) ids. */
export class IdTable<T extends HasId> {
  #slots: Array<T | undefined>;
  #mask: number;
  readonly #capacity: number;
  readonly #overflow = new Map<number, T>();
  #size = 0;

  /** @param capacity Most slots in the ring, rounded up to a power of two (at least 16). */
  constructor(capacity: number) {
    let slots = MIN_SLOTS;
    while (slots < capacity) slots *= 2;
    this.#capacity = slots;
    this.#slots = new Array<T | undefined>(MIN_SLOTS).fill(undefined);
    this.#mask = MIN_SLOTS - 1;
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
    let index = value.id & this.#mask;
    while (this.#slots[index] !== undefined && this.#slots.length < this.#capacity) {
      this.#grow();
      index = value.id & this.#mask;
    }
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

  /** Doubles the ring; what waited in the overflow moves in where its slot is free. */
  #grow(): void {
    const slots = new Array<T | undefined>(this.#slots.length * 2).fill(undefined);
    const mask = slots.length - 1;
    // Two values held in distinct slots keep distinct slots: their ids differ in the old bits.
    for (const value of this.#slots) if (value !== undefined) slots[value.id & mask] = value;
    for (const [id, value] of this.#overflow) {
      if (slots[id & mask] === undefined) {
        slots[id & mask] = value;
        this.#overflow.delete(id);
      }
    }
    this.#slots = slots;
    this.#mask = mask;
  }

  clear(): void {
    this.#slots.fill(undefined);
    this.#overflow.clear();
    this.#size = 0;
  }
}
