// The one options checker: every option range check in the library goes through these, so
// every out-of-range option fails with a RangeError of one format, naming the option, the
// range and the value: `maxInFlight must be an integer from 1 to 9007199254740991, got 0`.

/**
 * Returns `value` if it is an integer from `min` to `max` (both included).
 *
 * @throws {RangeError} Otherwise, naming the option, the range and the value.
 */
export function integerOption(
  name: string,
  value: number,
  min: number,
  max: number = Number.MAX_SAFE_INTEGER,
): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw outOfRange(name, `an integer from ${min} to ${max}`, value);
  }
  return value;
}

/**
 * Returns `value` if it is a number from `min` to `max` (both included; `Infinity` passes
 * when `max` is `Infinity`, `NaN` never does).
 *
 * @throws {RangeError} Otherwise, naming the option, the range and the value.
 */
export function numberOption(
  name: string,
  value: number,
  min: number,
  max: number = Infinity,
): number {
  if (!(value >= min && value <= max)) {
    throw outOfRange(name, `a number from ${min} to ${max}`, value);
  }
  return value;
}

/**
 * Returns `value` if it is a number above 0 (`Infinity` included): a duration or interval.
 *
 * @throws {RangeError} Otherwise, naming the option and the value.
 */
export function positiveOption(name: string, value: number): number {
  if (!(value > 0)) throw outOfRange(name, "a number above 0", value);
  return value;
}

/** The one message format of an option out of range. */
function outOfRange(name: string, expected: string, value: unknown): RangeError {
  return new RangeError(`${name} must be ${expected}, got ${String(value)}`);
}

/**
 * Returns `value` if it is a codec object (a `name` string, `encode` and `decode` functions).
 *
 * @throws {TypeError} Otherwise, naming the option: for a function (a codec factory such as
 * `rawCodec` passed where its result belongs) it says to call it.
 */
export function codecOption<C>(name: string, value: C): C {
  if (typeof value === "function") {
    const factory = value.name || "the factory";
    throw new TypeError(
      `${name} must be a codec object, got the function ${factory}: pass ${factory}(), ` +
        `not ${factory}`,
    );
  }
  const codec = value as { name?: unknown; encode?: unknown; decode?: unknown } | null;
  if (
    typeof codec !== "object" || codec === null || typeof codec.name !== "string" ||
    typeof codec.encode !== "function" || typeof codec.decode !== "function"
  ) {
    throw new TypeError(
      `${name} must be a codec (an object with name, encode and decode, such as jsonCodec()), ` +
        `got ${describe(value)}`,
    );
  }
  return value;
}

function describe(value: unknown): string {
  if (value === null || typeof value !== "object") return String(value);
  if (Array.isArray(value)) return "an array";
  const keys = Object.keys(value);
  return keys.length === 0 ? "an object with no fields" : `an object with ${keys.join(", ")}`;
}
