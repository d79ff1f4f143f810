// A codec's failure, said as what failed: the param or result of which method, on which side.
// A codec names the path inside the value (`$ is an instance of Timeout`) but not whose value
// it was; a result that cannot be sent reaches the caller, whose own handler may pass it on
// to another caller, so the message says which method's handler made it.

import { CodecError } from "../errors.ts";

/** `error` as a CodecError naming `subject`; any other error as it is. */
export function codecFailure(error: unknown, subject: string): unknown {
  if (!(error instanceof CodecError)) return error;
  return new CodecError(error.codec, error.operation, error, subject);
}
