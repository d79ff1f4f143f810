/**
 * A strict check of a plain object against a protobufjs message type, run before encoding.
 *
 * protobufjs's own `verify` rejects `bigint` and decimal strings for 64-bit fields (the very
 * forms this codec decodes them to), checks no integer ranges and ignores unknown keys, while
 * `fromObject` coerces whatever it gets (`String(x)`, `x | 0`). This check accepts exactly what
 * the codec's `decode` produces for the chosen `int64` form, and names the first field that
 * does not fit.
 *
 * @module
 */

import { Enum, type Field, type MapField, type Type, util } from "protobufjs";

/** How 64-bit integer fields appear in plain objects. */
export type Int64Form = "bigint" | "string";

const INT32_MIN = -(2 ** 31);
const INT32_END = 2 ** 31;
const UINT32_END = 2 ** 32;
const INT64_MIN = -(2n ** 63n);
const INT64_END = 2n ** 63n;
const UINT64_END = 2n ** 64n;
const DECIMAL = /^-?(0|[1-9][0-9]*)$/;

/** The resolved editions features protobufjs keeps on an enum (not in its declarations). */
interface EnumFeatures {
  _features?: { enum_type?: string };
}

function fitsInt32(n: number): boolean {
  return n >= INT32_MIN && n < INT32_END;
}

/** Checks a value at a nesting depth; returns the problem, prefixed by its path. */
type Check = (value: unknown, depth: number) => string | undefined;

/**
 * Compiles the check of plain objects against `type`, once per type: the returned function
 * gives why a value cannot be encoded as `type`, or `undefined` when it can.
 *
 * @param type A resolved message type.
 * @param int64 The form 64-bit integer fields take.
 */
export function messageVerifier(
  type: Type,
  int64: Int64Form,
): (value: unknown) => string | undefined {
  const check = compileMessage(type, int64, new Map());
  return (value) => check(value, 0);
}

function compileMessage(type: Type, int64: Int64Form, cache: Map<Type, Check>): Check {
  const cached = cache.get(type);
  if (cached !== undefined) return cached;
  const fields: Array<{ name: string; required: boolean; check: Check }> = [];
  const known = new Set<string>();
  const oneofs = type.oneofsArray.map((oneof) => ({ name: oneof.name, members: oneof.oneof }));
  const check: Check = (value, depth) => {
    if (depth > util.recursionLimit) {
      return `messages nest deeper than the protobufjs recursion limit (${util.recursionLimit})`;
    }
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      return `${type.name} message expected, got ${describe(value)}`;
    }
    const record = value as Record<string, unknown>;
    for (const key in record) {
      if (!known.has(key)) return `${key}: no such field in ${type.name}`;
    }
    for (let i = 0; i < fields.length; i++) {
      const field = fields[i];
      const fieldValue = record[field.name];
      if (fieldValue === undefined || fieldValue === null) {
        if (field.required) return `${field.name}: required field missing`;
        continue;
      }
      const problem = field.check(fieldValue, depth);
      if (problem !== undefined) return field.name + problem;
    }
    for (const { name, members } of oneofs) {
      const set = members.filter((m) => record[m] !== undefined && record[m] !== null);
      if (set.length > 1) return `${set.join(", ")}: at most one member of oneof ${name}`;
    }
    return undefined;
  };
  cache.set(type, check); // before the fields, so a recursive type finds itself
  for (const field of type.fieldsArray) {
    known.add(field.name);
    fields.push({
      name: field.name,
      required: field.required,
      check: compileField(field, int64, cache),
    });
  }
  return check;
}

function compileField(field: Field, int64: Int64Form, cache: Map<Type, Check>): Check {
  const value = compileValue(field, int64, cache);
  if (field.map) {
    const keyType = (field as unknown as MapField).keyType;
    return (map, depth) => {
      if (typeof map !== "object" || Array.isArray(map)) {
        return `: map expected, got ${describe(map)}`;
      }
      for (const [key, entry] of Object.entries(map as Record<string, unknown>)) {
        const keyProblem = verifyMapKey(keyType, key);
        if (keyProblem !== undefined) return `[${JSON.stringify(key)}]: ${keyProblem}`;
        const problem = value(entry, depth);
        if (problem !== undefined) return `[${JSON.stringify(key)}]${problem}`;
      }
      return undefined;
    };
  }
  if (field.repeated) {
    return (list, depth) => {
      if (!Array.isArray(list)) return `: array expected, got ${describe(list)}`;
      for (let i = 0; i < list.length; i++) {
        const problem = value(list[i], depth);
        if (problem !== undefined) return `[${i}]${problem}`;
      }
      return undefined;
    };
  }
  return value;
}

function compileValue(field: Field, int64: Int64Form, cache: Map<Type, Check>): Check {
  const resolved = field.resolvedType;
  if (resolved instanceof Enum) {
    const numbers = new Set(Object.values(resolved.values));
    // An open enum (proto3, editions' default) holds any int32, listed or not: a number from a
    // newer schema must be re-encodable. A closed one (proto2) holds only its listed values.
    const open = (resolved as unknown as EnumFeatures)._features?.enum_type !== "CLOSED";
    return (value) =>
      (typeof value === "number" &&
          (numbers.has(value) || (open && Number.isInteger(value) && fitsInt32(value)))) ||
        (typeof value === "string" && Object.hasOwn(resolved.values, value))
        ? undefined
        : `: ${resolved.name} value expected, got ${describe(value)}`;
  }
  if (resolved !== null) {
    // Compiled lazily: the nested type may be the one being compiled.
    let nested: Check | undefined;
    return (value, depth) => {
      nested ??= compileMessage(resolved, int64, cache);
      const problem = nested(value, depth + 1);
      return problem === undefined ? undefined : `.${problem}`;
    };
  }
  const type = field.type;
  const fits = scalarTest(type, int64);
  return (value) => {
    if (fits(value)) return undefined;
    return `: ${verifyScalar(type, value, int64) ?? `${type} expected`}`;
  };
}

/** A fast yes/no for the common case; {@linkcode verifyScalar} explains a no. */
function scalarTest(type: string, int64: Int64Form): (value: unknown) => boolean {
  switch (type) {
    case "int32":
    case "sint32":
    case "sfixed32":
      return (v) => typeof v === "number" && (v | 0) === v;
    case "uint32":
    case "fixed32":
      return (v) => typeof v === "number" && v >>> 0 === v;
    case "double":
    case "float":
      return (v) => typeof v === "number";
    case "bool":
      return (v) => typeof v === "boolean";
    case "string":
      return (v) => typeof v === "string" && v.isWellFormed();
    case "bytes":
      return (v) => v instanceof Uint8Array;
    default:
      return (v) => verifyScalar(type, v, int64) === undefined;
  }
}

function verifyScalar(type: string, value: unknown, int64: Int64Form): string | undefined {
  switch (type) {
    case "int32":
    case "sint32":
    case "sfixed32":
      return intIn(value, INT32_MIN, INT32_END)
        ? undefined
        : `${type} expected, got ${describe(value)}`;
    case "uint32":
    case "fixed32":
      return intIn(value, 0, UINT32_END) ? undefined : `${type} expected, got ${describe(value)}`;
    case "int64":
    case "sint64":
    case "sfixed64":
      return verifyInt64(type, value, int64, INT64_MIN, INT64_END);
    case "uint64":
    case "fixed64":
      return verifyInt64(type, value, int64, 0n, UINT64_END);
    case "double":
    case "float":
      return typeof value === "number" ? undefined : `number expected, got ${describe(value)}`;
    case "bool":
      return typeof value === "boolean" ? undefined : `boolean expected, got ${describe(value)}`;
    case "string":
      if (typeof value !== "string") return `string expected, got ${describe(value)}`;
      return value.isWellFormed() ? undefined : "string with a lone surrogate (not valid UTF-8)";
    case "bytes":
      return value instanceof Uint8Array
        ? undefined
        : `Uint8Array expected, got ${describe(value)}`;
    default:
      return `unsupported field type ${type}`;
  }
}

function verifyInt64(
  type: string,
  value: unknown,
  int64: Int64Form,
  min: bigint,
  end: bigint,
): string | undefined {
  let big: bigint;
  if (int64 === "bigint" && typeof value === "bigint") {
    big = value;
  } else if (int64 === "string" && typeof value === "string" && DECIMAL.test(value)) {
    big = BigInt(value);
  } else {
    return `${type} as a ${int64 === "bigint" ? "bigint" : "decimal string"} expected, got ${
      describe(value)
    }`;
  }
  return big >= min && big < end ? undefined : `${big} is out of range for ${type}`;
}

/** The ranges of the integer key types, [min, end), as a key is a decimal string. */
const KEY_RANGES: Record<string, readonly [bigint, bigint]> = {
  int32: [BigInt(INT32_MIN), BigInt(INT32_END)],
  sint32: [BigInt(INT32_MIN), BigInt(INT32_END)],
  sfixed32: [BigInt(INT32_MIN), BigInt(INT32_END)],
  uint32: [0n, BigInt(UINT32_END)],
  fixed32: [0n, BigInt(UINT32_END)],
  int64: [INT64_MIN, INT64_END],
  sint64: [INT64_MIN, INT64_END],
  sfixed64: [INT64_MIN, INT64_END],
  uint64: [0n, UINT64_END],
  fixed64: [0n, UINT64_END],
};

function verifyMapKey(keyType: string, key: string): string | undefined {
  switch (keyType) {
    case "string":
      return key.isWellFormed() ? undefined : "string key with a lone surrogate (not valid UTF-8)";
    case "bool":
      return key === "true" || key === "false" ? undefined : "bool key expected";
  }
  const range = KEY_RANGES[keyType];
  if (!DECIMAL.test(key) || range === undefined) return `${keyType} key expected`;
  // As written, a key out of range would come back as another number (2147483648 as int32:
  // -2147483648).
  const big = BigInt(key);
  return big >= range[0] && big < range[1] ? undefined : `${key} is out of range for ${keyType}`;
}

function intIn(value: unknown, min: number, end: number): boolean {
  return Number.isInteger(value) && (value as number) >= min && (value as number) < end;
}

function describe(value: unknown): string {
  if (value === null) return "null";
  if (Array.isArray(value)) return "an array";
  if (typeof value === "object") return value.constructor?.name ?? "an object";
  if (typeof value === "string") return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === "bigint") return `the bigint ${value}`;
  return `${typeof value} ${String(value)}`;
}
