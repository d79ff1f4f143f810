/**
 * Carries the unknown fields protobufjs keeps on decoded messages (`$unknowns`, the raw bytes
 * of each field the schema does not know, closed-enum values it does not list included) over
 * to the plain objects this codec hands out, and back onto the messages `fromObject` builds,
 * so that a message passing through an older schema keeps the newer fields. On plain objects
 * the property is not enumerable: `Object.keys`, JSON and `deepStrictEqual` do not see it.
 *
 * @module
 */

import type { Type } from "protobufjs";

/** The property protobufjs's decoder fills and its encoder writes back. */
export const UNKNOWNS = "$unknowns";

type Copy = (from: unknown, to: unknown) => void;
type Record_ = Record<string, unknown>;

/**
 * Compiles, once per type, a function that copies `$unknowns` from one tree of messages to
 * another of the same shape (a decoded message and its plain object, or the reverse), at every
 * level of nested messages, repeated and map fields included.
 */
export function unknownsCopier(type: Type): Copy {
  return compile(type, new Map());
}

function compile(type: Type, cache: Map<Type, Copy>): Copy {
  const cached = cache.get(type);
  if (cached !== undefined) return cached;
  const nested: Array<{ name: string; kind: "one" | "list" | "map"; copy: () => Copy }> = [];
  const copy: Copy = (from, to) => {
    const source = from as Record_;
    const target = to as Record_;
    if (Object.hasOwn(source, UNKNOWNS) && source[UNKNOWNS] != null) {
      Object.defineProperty(target, UNKNOWNS, {
        value: (source[UNKNOWNS] as Uint8Array[]).slice(),
        writable: true,
        configurable: true,
        enumerable: false,
      });
    }
    for (let i = 0; i < nested.length; i++) {
      const { name, kind } = nested[i];
      const a = source[name];
      const b = target[name];
      if (a == null || b == null || typeof a !== "object" || typeof b !== "object") continue;
      const inner = nested[i].copy();
      if (kind === "one") {
        inner(a, b);
      } else if (kind === "list") {
        const list = a as unknown[];
        const other = b as unknown[];
        for (let j = 0; j < list.length && j < other.length; j++) {
          if (list[j] != null && other[j] != null) inner(list[j], other[j]);
        }
      } else {
        for (const key of Object.keys(a)) {
          const x = (a as Record_)[key];
          const y = (b as Record_)[key];
          if (x != null && y != null && typeof x === "object" && typeof y === "object") inner(x, y);
        }
      }
    }
  };
  cache.set(type, copy);
  for (const field of type.fieldsArray) {
    const resolved = field.resolve().resolvedType;
    // Only message fields can hold unknowns of their own; "fields" of an Enum type are skipped.
    if (resolved === null || !("fieldsArray" in resolved)) continue;
    let compiled: Copy | undefined;
    nested.push({
      name: field.name,
      kind: (field as { map?: boolean }).map ? "map" : field.repeated ? "list" : "one",
      // Compiled lazily: the nested type may be the one being compiled.
      copy: () => compiled ??= compile(resolved as Type, cache),
    });
  }
  return copy;
}
