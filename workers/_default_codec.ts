// The codec a parent speaks to a worker module by default, loaded on first use: the structured
// codec brings conduit's MessagePack modules, which a program that imports `@conduit/ipc` and never spawns
// such a worker should not load.

import type { Codec } from "../codecs/types.ts";

/** The structured codec, once its module has loaded. */
export async function defaultWorkerCodec(): Promise<Codec<unknown>> {
  const { structuredCodec } = await import("../codecs/structured.ts");
  return structuredCodec();
}
