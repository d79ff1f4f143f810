/**
 * Codecs: values to bytes and back. This module has the contract only; each codec has its
 * own entrypoint (`@conduit/ipc/codecs/json`, `/msgpack`, `/structured`, `/protobuf`,
 * `/arrow`, `/raw`) so that importing one never loads another's dependencies.
 *
 * @example
 * ```ts
 * import type { Codec } from "@conduit/ipc/codecs";
 * import assert from "node:assert/strict";
 *
 * const upper: Codec<string> = {
 *   name: "upper",
 *   encode: (s) => new TextEncoder().encode(s.toUpperCase()),
 *   decode: (b) => new TextDecoder().decode(b),
 * };
 * assert.equal(upper.decode(upper.encode("a")), "A");
 * ```
 *
 * @module
 */

export * from "./types.ts";
