// Record shapes for the structured codec (docs/protocol.md §14): a ShapeEncoder (the sending
// side) learns the shapes of the records `encodeShaped` writes; a ShapeDecoder (the receiving
// side) holds the shapes the peer defined, within ShapeLimits it checks against a hostile peer.
// The definitions travel apart from the bodies (conduit's SHAPE frame): a body may be encoded and
// never sent, or received and never decoded. structured.ts exports them.

import { ShapeError } from "../errors.ts";
import { utf8Length } from "../_utf8.ts";
import type {
  RecordShape,
  ShapeDecoderTable,
  ShapeEncoderOptions,
  ShapeEncoderTable,
  ShapeLimits,
} from "./types.ts";

/**
 * The default {@linkcode ShapeLimits}, the same on both sides: a sending side never defines
 * more than a receiving side with these limits accepts.
 *
 * @example
 * ```ts
 * import { DEFAULT_SHAPE_LIMITS } from "@conduit/ipc/codecs/structured";
 * import assert from "node:assert/strict";
 *
 * assert.equal(DEFAULT_SHAPE_LIMITS.maxShapes, 1024);
 * ```
 */
export const DEFAULT_SHAPE_LIMITS: ShapeLimits = Object.freeze({
  maxShapes: 1024,
  maxKeysPerShape: 64,
  maxKeyBytes: 128,
  maxTableBytes: 65536,
});

/** The largest `maxShapes`: a shape id takes at most two bytes in a body. */
const MAX_SHAPE_IDS = 0x10000;

/**
 * A shape of one direction: its id and its keys, in order. The sending side makes them;
 * {@linkcode ShapeEncoder.commit} tells whether one still needs its definition sent.
 */
export class Shape implements RecordShape {
  /** The shape's id in its direction's table. */
  readonly id: number;
  /** The keys, in order. */
  readonly keys: readonly string[];
  /** Whether its definition was sent. */
  #committed = false;

  /**
   * A shape (made by {@linkcode ShapeEncoder}).
   *
   * @param id The shape's id.
   * @param keys The keys, in order.
   */
  constructor(id: number, keys: readonly string[]) {
    this.id = id;
    this.keys = keys;
  }

  /** Whether its definition was sent. */
  get committed(): boolean {
    return this.#committed;
  }

  /** Marks it sent; true the first time. */
  commitOnce(): boolean {
    if (this.#committed) return false;
    this.#committed = true;
    return true;
  }
}

/** One record path in the encoder's trie: the keys so far. */
interface Node {
  next: Map<string, Node> | undefined;
  /** Records of exactly these keys met so far, until a shape is made. */
  seen: number;
  shape: Shape | undefined;
}

const NO_SHAPES: readonly Shape[] = Object.freeze([]);

/** Records of a shape met this many times get a shape: the first is sent with its keys. */
const PROPOSE_AT = 2;
/**
 * The trie's nodes per shape, at most: when full, the paths that led to no shape are dropped,
 * and once those to shapes fill half of it, records of new key paths are sent with their keys.
 */
const MAX_NODES_PER_SHAPE = 4;

/**
 * The sending side of one direction's shape table. A {@linkcode ShapingCodec} asks it, per
 * record, for the record's shape: the second record of a shape gets one (an id of its own),
 * `uncommitted` then lists it after that encode, and the definition must be sent before the
 * body (`commit` says whether it still must be). A body never sent leaves its new shapes
 * uncommitted: the next body that uses them lists them again.
 *
 * @example
 * ```ts
 * import { ShapeEncoder } from "@conduit/ipc/codecs/structured";
 * import assert from "node:assert/strict";
 *
 * const table = new ShapeEncoder();
 * table.startEncode();
 * assert.equal(table.shapeOf(["id", "name"]), undefined); // the first: keys sent
 * const shape = table.shapeOf(["id", "name"])!;
 * assert.deepEqual(table.uncommitted(), [shape]);
 * assert.equal(table.commit(shape), true); // send its definition now
 * assert.equal(table.commit(shape), false); // already sent
 * ```
 */
export class ShapeEncoder implements ShapeEncoderTable {
  readonly #limits: ShapeLimits;
  readonly #maxFrameBytes: number;
  readonly #root: Node = { next: undefined, seen: 0, shape: undefined };
  #nodes = 0;
  /** Set once the paths to shapes alone fill half the trie's room: no pruning frees enough. */
  #crowded = false;
  #shapes = 0;
  #tableBytes = 0;
  #uncommitted: Shape[] = [];
  /** The paths whose records this encode counted, short of a shape. */
  #counted: Node[] = [];

  /**
   * An empty table for the sending side of one direction.
   *
   * @param options The peer's limits (those it enforces), by default
   * {@linkcode DEFAULT_SHAPE_LIMITS}, and the largest definition it reads.
   */
  constructor(options: ShapeEncoderOptions = {}) {
    const { maxFrameBytes, ...limits } = options;
    this.#limits = checkLimits(limits);
    this.#maxFrameBytes = maxFrameBytes ?? Infinity;
  }

  /**
   * Called by a codec before each encode: `uncommitted` then lists that encode's shapes.
   *
   * @param again Whether the value of the last encode is encoded once more (a codec's second
   * pass): its records, met by the last pass already, are not counted twice.
   */
  startEncode(again = false): void {
    if (again) { for (const node of this.#counted) node.seen--; }
    this.#counted.length = 0;
    if (this.#uncommitted.length > 0) this.#uncommitted = [];
  }

  /**
   * The shape to send a record of these keys with, or `undefined` to send its keys. Called by
   * a codec for each record with keys well-formed strings.
   */
  shapeOf(keys: readonly string[]): Shape | undefined {
    const limits = this.#limits;
    if (keys.length === 0 || keys.length > limits.maxKeysPerShape) return undefined;
    const room = limits.maxShapes * MAX_NODES_PER_SHAPE;
    if (this.#nodes + keys.length > room && !this.#crowded) {
      // Records whose keys never repeat (a dictionary keyed by data) would otherwise fill the
      // trie for good: the paths that led to no shape go, and their counts start again.
      this.#nodes = prune(this.#root);
      this.#crowded = this.#nodes * 2 > room;
    }
    let node = this.#root;
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      let next = node.next?.get(key);
      if (next === undefined) {
        // A key too long for a shape gets no node: its records, whose keys may be a peer's
        // choice, would keep it alive and use up the room of later shapes. (A UTF-16 unit
        // takes at least one byte of UTF-8, so a long key is not measured.)
        const most = limits.maxKeyBytes;
        if (this.#nodes >= room || key.length > most || utf8Length(key) > most) return undefined;
        next = { next: undefined, seen: 0, shape: undefined };
        (node.next ??= new Map()).set(key, next);
        this.#nodes++;
      }
      node = next;
    }
    let shape = node.shape;
    if (shape === undefined) {
      if (++node.seen < PROPOSE_AT) {
        this.#counted.push(node);
        return undefined;
      }
      const bytes = keyBytes(keys);
      if (
        this.#shapes >= limits.maxShapes || this.#tableBytes + bytes > limits.maxTableBytes ||
        shapeFrameBytes(this.#shapes, keys) > this.#maxFrameBytes
      ) {
        return undefined;
      }
      shape = node.shape = new Shape(this.#shapes++, keys.slice());
      this.#tableBytes += bytes;
    }
    // Uncommitted shapes are few (the first uses of each): a linear check is enough.
    if (!shape.committed && !this.#uncommitted.includes(shape)) this.#uncommitted.push(shape);
    return shape;
  }

  /** The shapes the last encode used whose definitions were never sent, in id order of use. */
  uncommitted(): readonly Shape[] {
    // The empty list is kept for the next encode to fill: it is not the one to hand out.
    return this.#uncommitted.length === 0 ? NO_SHAPES : this.#uncommitted;
  }

  /**
   * Marks a shape's definition as sent (call it as the definition is written, before the body
   * that uses it); true when it was not sent before, so it must be written now.
   */
  commit(shape: RecordShape): boolean {
    return shape instanceof Shape && shape.commitOnce();
  }
}

/**
 * The receiving side of one direction's shape table: the shapes the peer defined, checked
 * against {@linkcode ShapeLimits}. Every breach is a {@linkcode ShapeError} naming the limit
 * and the value.
 *
 * @example
 * ```ts
 * import { ShapeDecoder } from "@conduit/ipc/codecs/structured";
 * import assert from "node:assert/strict";
 *
 * const table = new ShapeDecoder();
 * table.define(0, ["id", "name"]);
 * assert.deepEqual(table.keysOf(0), ["id", "name"]);
 * assert.throws(() => table.keysOf(1), /shape 1, which the peer never defined/);
 * ```
 */
export class ShapeDecoder implements ShapeDecoderTable {
  readonly #limits: ShapeLimits;
  readonly #keys: Array<readonly string[] | undefined> = [];
  #tableBytes = 0;

  /**
   * An empty table for the receiving side of one direction.
   *
   * @param limits The limits to enforce, by default {@linkcode DEFAULT_SHAPE_LIMITS}. A
   * limit out of range (below 1, `maxShapes` above 65536) is a `RangeError`.
   */
  constructor(limits: Partial<ShapeLimits> = {}) {
    this.#limits = checkLimits(limits);
  }

  /**
   * Throws {@linkcode ShapeError} when shape `id` may not have `count` keys, or a key of
   * `longestKeyBytes`.
   */
  checkKeyCount(id: number, count: number, longestKeyBytes = 0): void {
    const { maxKeysPerShape: most, maxKeyBytes } = this.#limits;
    if (count === 0 || count > most) {
      throw new ShapeError(
        `Shape ${id} has ${count} keys, where a shape has 1 to maxKeysPerShape (${most})`,
      );
    }
    if (longestKeyBytes > maxKeyBytes) {
      throw new ShapeError(
        `Shape ${id} has a key of ${longestKeyBytes} bytes, over maxKeyBytes (${maxKeyBytes})`,
      );
    }
  }

  /** Adds the peer's shape `id`; throws {@linkcode ShapeError} past a limit or on a reused id. */
  define(id: number, keys: readonly string[]): void {
    const limits = this.#limits;
    if (!Number.isInteger(id) || id < 0 || id >= limits.maxShapes) {
      throw new ShapeError(
        `Shape id ${id} is outside the table: ids are below maxShapes (${limits.maxShapes})`,
      );
    }
    // Ids are below maxShapes and defined once each: the table holds at most maxShapes.
    if (this.#keys[id] !== undefined) throw new ShapeError(`Shape ${id} is defined twice`);
    this.checkKeyCount(id, keys.length);
    const seen = new Set<string>();
    let bytes = 0;
    for (const key of keys) {
      if (typeof key !== "string") throw new ShapeError(`Shape ${id} has a key that is no string`);
      const length = utf8Length(key);
      this.checkKeyCount(id, keys.length, length);
      if (seen.has(key)) {
        throw new ShapeError(`Shape ${id} has the key ${JSON.stringify(key)} twice`);
      }
      seen.add(key);
      bytes += length;
    }
    if (this.#tableBytes + bytes > limits.maxTableBytes) {
      throw new ShapeError(
        `Shape ${id} takes the table to ${this.#tableBytes + bytes} key bytes, over ` +
          `maxTableBytes (${limits.maxTableBytes})`,
      );
    }
    this.#keys[id] = Object.freeze(keys.slice());
    this.#tableBytes += bytes;
  }

  /** The keys of shape `id`; throws {@linkcode ShapeError} for a shape never defined. */
  keysOf(id: number): readonly string[] {
    const keys = this.#keys[id];
    if (keys === undefined) {
      throw new ShapeError(`A body uses shape ${id}, which the peer never defined`);
    }
    return keys;
  }
}

function checkLimits(limits: Partial<ShapeLimits>): ShapeLimits {
  const checked = { ...DEFAULT_SHAPE_LIMITS, ...limits };
  for (const [name, value] of Object.entries(checked)) {
    const max = name === "maxShapes" ? MAX_SHAPE_IDS : 0xffff_ffff;
    if (!Number.isInteger(value) || value < 1 || value > max) {
      throw new RangeError(`${name} must be an integer from 1 to ${max}, got ${value}`);
    }
  }
  return checked;
}

/** The bytes of conduit's SHAPE frame of shape `id` (docs/protocol.md §14). */
function shapeFrameBytes(id: number, keys: readonly string[]): number {
  let bytes = 1 + varintBytes(id) + varintBytes(keys.length);
  for (const key of keys) {
    const length = utf8Length(key);
    bytes += varintBytes(length) + length;
  }
  return bytes;
}

/** The bytes of a varint below 2^21. */
function varintBytes(value: number): number {
  return value < 0x80 ? 1 : value < 0x4000 ? 2 : 3;
}

/** Drops the paths below `node` that lead to no shape; returns how many nodes are left below. */
function prune(node: Node): number {
  let kept = 0;
  for (const [key, child] of node.next ?? []) {
    const below = prune(child);
    if (below === 0 && child.shape === undefined) node.next!.delete(key);
    else kept += below + 1;
  }
  return kept;
}

function keyBytes(keys: readonly string[]): number {
  let bytes = 0;
  for (const key of keys) bytes += utf8Length(key);
  return bytes;
}
