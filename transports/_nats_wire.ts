// The messages a NATS transport sends to its peer's inbox, and the handshake bodies. The
// format is written down in transports/nats.ts's module doc; this file is its one encoder and
// decoder.

/** The kind byte that starts every message on a connection's inbox. */
export const Kind = {
  /** Bytes of the stream. */
  Data: 0,
  /** The receiver allows the sender to have sent this many bytes in total (a float64). */
  Credit: 1,
  /** The sender half-closed: no more Data follows. */
  End: 2,
  /** Liveness: the sender is still there (published with a reply subject). */
  Ping: 3,
  /** The sender closed both directions gracefully. */
  Bye: 4,
  /** The sender aborted; the rest of the message is the reason, UTF-8. */
  Reset: 5,
  /** The client's first message, to the listener instance whose reply it took. */
  Open: 6,
} as const;

/** One of {@linkcode Kind}'s values. */
export type Kind = typeof Kind[keyof typeof Kind];

/** Bytes before the body: the kind (1) and the sequence number (4, big-endian). */
export const HEADER_BYTES = 5;

/** The version this module speaks, checked in the handshake. */
export const PROTOCOL = "conduit-nats/1";

/** The client's handshake request and the listener's reply. */
export interface Hello {
  /** Always {@linkcode PROTOCOL}. */
  protocol: string;
  /** The subject the sender reads its messages from. */
  inbox: string;
  /** The bytes the sender lets its peer have in flight towards it. */
  window: number;
  /** The heartbeat interval the sender keeps, in ms. */
  heartbeat: number;
}

/** A refusal the listener replies with instead of a {@linkcode Hello}. */
export interface Refusal {
  protocol: string;
  error: string;
}

/** A message read back: its kind, sequence number and body (a view of the payload). */
export interface Decoded {
  kind: number;
  seq: number;
  body: Uint8Array;
}

/** Makes a message of `kind` with room for `bodyBytes` after the header, which it fills. */
export function message(kind: Kind, seq: number, bodyBytes: number): Uint8Array {
  const bytes = new Uint8Array(HEADER_BYTES + bodyBytes);
  bytes[0] = kind;
  bytes[1] = seq >>> 24;
  bytes[2] = (seq >>> 16) & 0xff;
  bytes[3] = (seq >>> 8) & 0xff;
  bytes[4] = seq & 0xff;
  return bytes;
}

/** A Credit message granting a cumulative total of `granted` bytes. */
export function creditMessage(seq: number, granted: number): Uint8Array {
  const bytes = message(Kind.Credit, seq, 8);
  new DataView(bytes.buffer).setFloat64(HEADER_BYTES, granted);
  return bytes;
}

/**
 * Reads a Credit body: a byte total, so a whole number. NaN in particular must not reach the
 * sender's window, where every comparison with it is false and a write would go out empty yet
 * resolve.
 */
export function readCredit(body: Uint8Array): number {
  if (body.length !== 8) throw new RangeError(`A Credit body is 8 bytes, got ${body.length}`);
  const granted = new DataView(body.buffer, body.byteOffset, 8).getFloat64(0);
  if (!isByteCount(granted, 0)) {
    throw new RangeError(`A Credit is a whole number of bytes, got ${granted}`);
  }
  return granted;
}

/** Splits a payload into kind, sequence number and body; `null` when it is too short. */
export function decode(payload: Uint8Array): Decoded | null {
  if (payload.length < HEADER_BYTES) return null;
  const seq = ((payload[1] << 24) | (payload[2] << 16) | (payload[3] << 8) | payload[4]) >>> 0;
  return { kind: payload[0], seq, body: payload.subarray(HEADER_BYTES) };
}

/** Encodes a handshake body. */
export function encodeHello(hello: Hello | Refusal): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(hello));
}

/** Decodes a handshake body; throws a TypeError naming what was wrong. */
export function decodeHello(payload: Uint8Array): Hello | Refusal {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch (cause) {
    throw new TypeError("The NATS handshake message is not JSON", { cause });
  }
  if (typeof value !== "object" || value === null) {
    throw new TypeError("The NATS handshake message is not an object");
  }
  const hello = value as Record<string, unknown>;
  if (hello.protocol !== PROTOCOL) {
    throw new TypeError(
      `The NATS handshake speaks ${JSON.stringify(hello.protocol)}, not ${PROTOCOL}`,
    );
  }
  if (typeof hello.error === "string") return { protocol: PROTOCOL, error: hello.error };
  if (
    typeof hello.inbox !== "string" || hello.inbox === "" || !isByteCount(hello.window, 1) ||
    !isPositive(hello.heartbeat)
  ) {
    throw new TypeError(`The NATS handshake message is malformed: ${JSON.stringify(hello)}`);
  }
  return hello as unknown as Hello;
}

/**
 * Whether `value` is a whole number of bytes of at least `min`. A window below one byte lets
 * no byte through and is never granted more (writes would wait forever); a fraction would cut
 * Data messages at fractions of bytes.
 */
export function isByteCount(value: unknown, min: number): value is number {
  return typeof value === "number" && Number.isSafeInteger(value) && value >= min;
}

function isPositive(value: unknown): value is number {
  return typeof value === "number" && Number.isFinite(value) && value > 0;
}
