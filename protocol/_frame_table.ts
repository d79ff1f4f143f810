// The one table from type byte to reader (docs/protocol.md §4). Every reader of conduit frames
// goes through it: decodeEnvelope (building an Envelope) and the channel's reader (dispatching
// the fields to the engine, building nothing). A reader parses and checks the whole frame
// before it calls the sink, so a sink never sees half a frame, and a malformed frame throws
// ProtocolError naming what is wrong.

import { Cursor, readVarint, varintProblem } from "./_varint.ts";
import { CALL_FLAG_STREAM_PARAM, FRAME_KINDS, R_FLAG } from "./frame_kinds.ts";
import { MAX_METHOD_BYTES } from "./limits.ts";
import { ProtocolError } from "./protocol_error.ts";

export { Cursor };

/**
 * What a frame means, one method per frame kind and R flag. `frame` is the whole frame
 * payload (for stream items, whose credit cost is its length); bodies are views into it.
 */
export interface FrameSink {
  hello(body: Uint8Array): void;
  goodbye(body: Uint8Array): void;
  ping(nonce: number): void;
  pong(nonce: number): void;
  call(id: number, flags: number, timeoutMs: number, method: string, body: Uint8Array): void;
  notify(method: string, body: Uint8Array): void;
  /** RESULT(R=1). */
  result(id: number, body: Uint8Array): void;
  /** ERROR(R=1): the terminal error of a call this side started. */
  callError(id: number, body: Uint8Array): void;
  /** ERROR(R=0): the caller's param stream failed. */
  paramError(id: number, body: Uint8Array): void;
  /** CANCEL(R=0): the caller cancels a call this side serves. */
  cancel(id: number, body: Uint8Array): void;
  /** CANCEL(R=1): the handler stopped reading this side's param stream. */
  paramCancel(id: number, body: Uint8Array): void;
  /** DATA(R=1). */
  resultItem(id: number, body: Uint8Array, frame: Uint8Array): void;
  /** DATA(R=0). */
  paramItem(id: number, body: Uint8Array, frame: Uint8Array): void;
  /** END(R=1). */
  resultEnd(id: number): void;
  /** END(R=0). */
  paramEnd(id: number): void;
  /** CREDIT(R=1): credit for this side's param stream. */
  paramCredit(id: number, bytes: number): void;
  /** CREDIT(R=0): credit for this side's result stream. */
  resultCredit(id: number, bytes: number): void;
}

/**
 * Reads frames through the table. Owns the cursor its readers share and, optionally, the
 * recent method names, matched by their bytes so a frequent method's name is not decoded
 * per frame.
 */
export class FrameParser {
  readonly cursor: Cursor = new Cursor();
  readonly names: MethodNames | undefined;

  constructor(names?: MethodNames) {
    this.names = names;
  }

  /** Parses `frame` and hands its fields to `sink`. @throws {ProtocolError} */
  read(frame: Uint8Array, sink: FrameSink): void {
    if (frame.length === 0) throw new ProtocolError("Empty frame: a frame needs a type byte");
    TABLE[frame[0]](frame, sink, this);
  }
}

/** How many incoming method names are matched without decoding them. */
const RECENT_METHODS = 8;

/** The method names of recent frames, with their bytes. */
export class MethodNames {
  readonly #recent: Array<{ bytes: Uint8Array; name: string }> = [];
  #next = 0;

  /** The recent name whose UTF-8 bytes are `frame[start, end)`, if any. */
  find(frame: Uint8Array, start: number, end: number): string | undefined {
    const length = end - start;
    search: for (const recent of this.#recent) {
      const bytes = recent.bytes;
      if (bytes.length !== length) continue;
      for (let i = 0; i < length; i++) if (frame[start + i] !== bytes[i]) continue search;
      return recent.name;
    }
    return undefined;
  }

  /** Remembers a name just decoded from `frame[start, end)`. */
  remember(name: string, frame: Uint8Array, start: number, end: number): void {
    const recent = { bytes: frame.slice(start, end), name };
    if (this.#recent.length < RECENT_METHODS) this.#recent.push(recent);
    else this.#recent[this.#next++ % RECENT_METHODS] = recent;
  }
}

type Reader = (frame: Uint8Array, sink: FrameSink, parser: FrameParser) => void;

const utf8 = new TextDecoder("utf-8", { fatal: true, ignoreBOM: true });

/** The name of a type byte's kind, for messages (`"DATA(R=1)"`, `"kind 0x7f"`). */
export function describeType(type: number): string {
  const kind = type & 0x7f;
  for (const [name, value] of Object.entries(FRAME_KINDS)) {
    if (value === kind) return `${name.toUpperCase()}(R=${type >= R_FLAG ? 1 : 0})`;
  }
  return `kind 0x${kind.toString(16)}`;
}

const readers: Record<number, Reader> = {
  [FRAME_KINDS.hello]: (frame, sink) => sink.hello(frame.subarray(1)),
  [FRAME_KINDS.goodbye]: (frame, sink) => sink.goodbye(frame.subarray(1)),
  [FRAME_KINDS.ping]: (frame, sink, parser) => sink.ping(nonceField(frame, parser)),
  [FRAME_KINDS.pong]: (frame, sink, parser) => sink.pong(nonceField(frame, parser)),
  [FRAME_KINDS.call]: readCall,
  [FRAME_KINDS.notify]: (frame, sink, parser) => {
    const method = methodField(frame, 1, parser);
    sink.notify(method, frame.subarray(parser.cursor.end));
  },
  [FRAME_KINDS.result | R_FLAG]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.result(id, frame.subarray(parser.cursor.end));
  },
  [FRAME_KINDS.error]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.paramError(id, frame.subarray(parser.cursor.end));
  },
  [FRAME_KINDS.error | R_FLAG]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.callError(id, frame.subarray(parser.cursor.end));
  },
  [FRAME_KINDS.cancel]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.cancel(id, frame.subarray(parser.cursor.end));
  },
  [FRAME_KINDS.cancel | R_FLAG]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.paramCancel(id, frame.subarray(parser.cursor.end));
  },
  [FRAME_KINDS.data]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.paramItem(id, frame.subarray(parser.cursor.end), frame);
  },
  [FRAME_KINDS.data | R_FLAG]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.resultItem(id, frame.subarray(parser.cursor.end), frame);
  },
  [FRAME_KINDS.end]: (frame, sink, parser) => sink.paramEnd(endField(frame, parser)),
  [FRAME_KINDS.end | R_FLAG]: (frame, sink, parser) => sink.resultEnd(endField(frame, parser)),
  [FRAME_KINDS.credit]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.resultCredit(id, creditField(frame, id, parser));
  },
  [FRAME_KINDS.credit | R_FLAG]: (frame, sink, parser) => {
    const id = idField(frame, parser);
    sink.paramCredit(id, creditField(frame, id, parser));
  },
  [FRAME_KINDS.result]: () => {
    throw new ProtocolError("RESULT frame without the R flag");
  },
};

const TABLE: readonly Reader[] = Array.from({ length: 256 }, (_, type): Reader => {
  const reader = readers[type];
  if (reader !== undefined) return reader;
  const kind = type & 0x7f;
  if (readers[kind] !== undefined) {
    // A kind that exists without the R flag only.
    return () => {
      throw new ProtocolError(`${describeType(type)}: this kind does not allow the R flag`);
    };
  }
  return () => {
    throw new ProtocolError(`Unknown frame kind 0x${kind.toString(16)}`);
  };
});

function readCall(frame: Uint8Array, sink: FrameSink, parser: FrameParser): void {
  const id = idField(frame, parser);
  const cursor = parser.cursor;
  const flags = field(frame, cursor.end, "flags", cursor);
  if ((flags & ~CALL_FLAG_STREAM_PARAM) !== 0) {
    throw new ProtocolError(`CALL ${id} has unknown flags 0x${flags.toString(16)}`);
  }
  const timeoutMs = field(frame, cursor.end, "timeoutMs", cursor);
  const method = methodField(frame, cursor.end, parser);
  const body = frame.subarray(cursor.end);
  if ((flags & CALL_FLAG_STREAM_PARAM) !== 0 && body.length > 0) {
    throw new ProtocolError(`CALL ${id} has STREAM_PARAM and a ${body.length}-byte body`);
  }
  sink.call(id, flags, timeoutMs, method, body);
}

function field(frame: Uint8Array, offset: number, name: string, cursor: Cursor): number {
  const value = readVarint(frame, offset, cursor);
  if (cursor.end < 0) {
    throw new ProtocolError(
      `${describeType(frame[0])} field ${name}: ${varintProblem(cursor.end)}`,
    );
  }
  return value;
}

/** The id right after the type byte; `cursor.end` is then the offset after it. */
function idField(frame: Uint8Array, parser: FrameParser): number {
  const id = field(frame, 1, "id", parser.cursor);
  if (id === 0) throw new ProtocolError(`${describeType(frame[0])} has id 0`);
  return id;
}

function nonceField(frame: Uint8Array, parser: FrameParser): number {
  const nonce = field(frame, 1, "nonce", parser.cursor);
  noBody(frame, parser.cursor.end);
  return nonce;
}

function endField(frame: Uint8Array, parser: FrameParser): number {
  const id = idField(frame, parser);
  noBody(frame, parser.cursor.end);
  return id;
}

function creditField(frame: Uint8Array, id: number, parser: FrameParser): number {
  const cursor = parser.cursor;
  const bytes = field(frame, cursor.end, "bytes", cursor);
  if (bytes === 0) throw new ProtocolError(`CREDIT for stream ${id} grants 0 bytes`);
  noBody(frame, cursor.end);
  return bytes;
}

function noBody(frame: Uint8Array, end: number): void {
  if (end !== frame.length) {
    throw new ProtocolError(
      `${describeType(frame[0])} has ${frame.length - end} unexpected trailing byte(s)`,
    );
  }
}

/** The method name whose length varint is at `offset`; `cursor.end` is then after the name. */
function methodField(frame: Uint8Array, offset: number, parser: FrameParser): string {
  const cursor = parser.cursor;
  const length = field(frame, offset, "methodLength", cursor);
  const start = cursor.end;
  if (length === 0 || length > MAX_METHOD_BYTES) {
    throw new ProtocolError(
      `${describeType(frame[0])} method of ${length} bytes (must be 1 to ${MAX_METHOD_BYTES})`,
    );
  }
  const end = start + length;
  if (end > frame.length) {
    throw new ProtocolError(
      `${describeType(frame[0])} method of ${length} bytes overruns the frame`,
    );
  }
  cursor.end = end;
  const names = parser.names;
  if (names === undefined) return decodeMethod(frame, start, end);
  let name = names.find(frame, start, end);
  if (name === undefined) {
    name = decodeMethod(frame, start, end);
    names.remember(name, frame, start, end);
  }
  return name;
}

function decodeMethod(frame: Uint8Array, start: number, end: number): string {
  // Method names are short and nearly always ASCII: skip TextDecoder for them.
  if (end - start <= 64) {
    let name = "";
    for (let i = start; i < end; i++) {
      const byte = frame[i];
      if (byte >= 0x80) return decodeUtf8Method(frame, start, end);
      name += String.fromCharCode(byte);
    }
    return name;
  }
  return decodeUtf8Method(frame, start, end);
}

function decodeUtf8Method(frame: Uint8Array, start: number, end: number): string {
  try {
    return utf8.decode(frame.subarray(start, end));
  } catch {
    throw new ProtocolError(`${describeType(frame[0])} method name is not valid UTF-8`);
  }
}
