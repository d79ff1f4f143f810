// JSON bodies of control frames (HELLO, GOODBYE, CANCEL).

const utf8 = new TextEncoder();
// Fatal: a body that is not UTF-8 is not JSON text (docs/protocol.md §5 check 1).
const text = new TextDecoder("utf-8", { fatal: true });

/** The JSON value of a UTF-8 body, or undefined when it is not JSON. */
export function parseJson(body: Uint8Array): unknown {
  try {
    return JSON.parse(text.decode(body));
  } catch {
    return undefined;
  }
}

/** What a CANCEL(R=0) body says: why, and whether it was the caller's deadline. */
export interface CancelReason {
  readonly reason: string | undefined;
  readonly code: unknown;
}

const NO_REASON: CancelReason = { reason: undefined, code: undefined };

/** Reads a CANCEL body (docs/protocol.md §6): JSON `{ reason, code }`, or empty. */
export function parseCancel(body: Uint8Array): CancelReason {
  if (body.length === 0) return NO_REASON;
  const parsed = parseJson(body) as { reason?: unknown; code?: unknown } | undefined;
  return {
    reason: typeof parsed?.reason === "string" ? parsed.reason : undefined,
    code: parsed?.code,
  };
}

/** The CANCEL(R=0) body for `reason` and `code`. */
export function cancelBody(reason: string, code: string | undefined): Uint8Array {
  return utf8.encode(JSON.stringify({ reason, code }));
}
