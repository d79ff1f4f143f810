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

/**
 * Returns why `value` cannot be encoded as `type`, or `undefined` when it can.
 *
 * @param type A resolved message type.
 * @param value The candidate plain object.
 * @param int64 The form 64-bit integer fields take.
 */
export function verifyMessage(type: Type, value: unknown, int64: Int64Form): string | undefined {
  return verifyObject(type, value, int64, 0);
}

function verifyObject(
  type: Type,
  value: unknown,
  int64: Int64Form,
  depth: number,
): string | undefined {
  if (depth > util.recursionLimit) {
    return `messages nest deeper than the protobufjs recursion limit (${util.recursionLimit})`;
  }
  if (typeof value !== "object" || value === null || Array.isArray(value)) {
    return `${type.name} message expected, got ${describe(value)}`;
  }
  const record = value as Record<string, unknown>;
  for (const key of Object.keys(record)) {
    if (!Object.hasOwn(type.fields, key)) return `${key}: no such field in ${type.name}`;
  }
  for (const field of type.fieldsArray) {
    const fieldValue = record[field.name];
    if (fieldValue === undefined || fieldValue === null) {
      if (field.required) return `${field.name}: required field missing`;
      continue;
    }
    const problem = verifyField(field, fieldValue, int64, depth);
    if (problem !== undefined) return `${field.name}${problem}`;
  }
  for (const oneof of type.oneofsArray) {
    const set = oneof.oneof.filter((name) => record[name] !== undefined && record[name] !== null);
    if (set.length > 1) return `${set.join(", ")}: at most one member of oneof ${oneof.name}`;
  }
  return undefined;
}

/** Returns the problem prefixed by its path below the field (`[2].x: …` or `: …`). */
function verifyField(
  field: Field,
  value: unknown,
  int64: Int64Form,
  depth: number,
): string | undefined {
  if (field.map) {
    if (typeof value !== "object" || Array.isArray(value)) {
      return `: map expected, got ${describe(value)}`;
    }
    const keyType = (field as unknown as MapField).keyType;
    for (const [key, entry] of Object.entries(value as Record<string, unknown>)) {
      const keyProblem = verifyMapKey(keyType, key);
      if (keyProblem !== undefined) return `[${JSON.stringify(key)}]: ${keyProblem}`;
      const problem = verifyValue(field, entry, int64, depth);
      if (problem !== undefined) return `[${JSON.stringify(key)}]${problem}`;
    }
    return undefined;
  }
  if (field.repeated) {
    if (!Array.isArray(value)) return `: array expected, got ${describe(value)}`;
    for (let i = 0; i < value.length; i++) {
      const problem = verifyValue(field, value[i], int64, depth);
      if (problem !== undefined) return `[${i}]${problem}`;
    }
    return undefined;
  }
  return verifyValue(field, value, int64, depth);
}

function verifyValue(
  field: Field,
  value: unknown,
  int64: Int64Form,
  depth: number,
): string | undefined {
  const resolved = field.resolvedType;
  if (resolved instanceof Enum) {
    const known = typeof value === "number"
      ? Object.values(resolved.values).includes(value)
      : typeof value === "string" && Object.hasOwn(resolved.values, value);
    return known ? undefined : `: ${resolved.name} value expected, got ${describe(value)}`;
  }
  if (resolved !== null) {
    const problem = verifyObject(resolved, value, int64, depth + 1);
    return problem === undefined ? undefined : `.${problem}`;
  }
  const problem = verifyScalar(field.type, value, int64);
  return problem === undefined ? undefined : `: ${problem}`;
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

function verifyMapKey(keyType: string, key: string): string | undefined {
  switch (keyType) {
    case "string":
      return undefined;
    case "bool":
      return key === "true" || key === "false" ? undefined : "bool key expected";
    default:
      return DECIMAL.test(key) ? undefined : `${keyType} key expected`;
  }
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
