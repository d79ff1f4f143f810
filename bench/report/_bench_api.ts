// What the report's conduit peer serves, and the per-method codecs both ends configure for the
// codec under test. Codec modules are imported on demand, so a peer only loads the codec it
// uses and the spawn-to-first-reply figure of a JSON peer does not include protobufjs.

import type { MethodCodec } from "../../channel/channel.ts";
import type { Codec } from "../../codecs/types.ts";

/** The codecs the report compares. */
export type CodecName = "json" | "msgpack" | "protobuf" | "raw";

/** The transports the report spawns peers over. */
export type TransportName = "stdio" | "unix" | "tcp";

/** The largest frame either end accepts: above the 64 MiB default, so no payload is refused. */
export const REPORT_MAX_FRAME_BYTES = 256 * 1024 * 1024;

/** The peer's methods. Values are whatever the codec under test carries. */
export interface BenchApi {
  /** Returns its param: a payload (structured data or raw bytes). */
  echo(value: unknown): unknown;
  /** Returns its param: a small message. */
  echoSmall(value: unknown): unknown;
  /** A notification: counts it. */
  note(value: unknown): void;
  /** How many notifications arrived so far (JSON). */
  noted(): number;
  /** Streams `count` items of `bytes` bytes each (raw). */
  blobs(param: { count: number; bytes: number }): AsyncIterable<Uint8Array>;
}

/** The codecs under test, and the per-method codecs that put them on the channel. */
export interface BenchCodecs {
  /** Carries the payloads (`echo`). */
  payload: Codec<unknown>;
  /** Carries small messages (`echoSmall`, `note`). */
  small: Codec<unknown>;
  /** For `ChannelOptions.methodCodecs`; the channel codec itself is always JSON. */
  methodCodecs: Record<string, MethodCodec>;
}

/** The codecs for `codec`. */
export async function methodCodecsFor(codec: CodecName): Promise<BenchCodecs> {
  const { rawCodec } = await import("../../codecs/raw.ts");
  const { jsonCodec } = await import("../../codecs/json.ts");
  const raw = rawCodec() as Codec<unknown>;
  const both = (payload: Codec<unknown>, small: Codec<unknown>): BenchCodecs => ({
    payload,
    small,
    methodCodecs: {
      echo: payload,
      echoSmall: small,
      note: small,
      blobs: { param: jsonCodec(), result: raw },
    },
  });
  switch (codec) {
    case "json":
      return both(jsonCodec(), jsonCodec());
    case "msgpack": {
      const { msgpackCodec } = await import("../../codecs/msgpack.ts");
      return both(msgpackCodec(), msgpackCodec());
    }
    case "protobuf": {
      // One parse of the schema serves both codecs (parsing it for each cost ~7 ms more).
      const [{ protobufCodec }, { parse }, proto] = await Promise.all([
        import("../../codecs/protobuf.ts"),
        import("protobufjs"),
        Deno.readTextFile(new URL("../bench.proto", import.meta.url)),
      ]);
      const root = parse(proto).root;
      return both(
        protobufCodec({ proto: root, type: "bench.Batch" }),
        protobufCodec({ proto: root, type: "bench.Call" }),
      );
    }
    case "raw":
      return both(raw, raw);
  }
}
