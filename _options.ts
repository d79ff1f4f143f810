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
