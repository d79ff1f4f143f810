/**
 * How a codec names a place inside a value in its errors: `$.items[3].callback`.
 *
 * @module
 */

const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/** The path segment of an object key: `.name`, or `["odd key"]` when it is no identifier. */
export function keySegment(key: string): string {
  return IDENTIFIER.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
