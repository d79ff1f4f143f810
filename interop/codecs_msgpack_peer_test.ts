/**
 * conduit's Map, Set, bigint and Date through the Python peer (interop/python/conduit_peer.py,
 * which packs with conduit_msgpack): Python receives dict, set, int and datetime, and what it
 * sends back, or makes itself, arrives as the same JavaScript values.
 */

import assert from "node:assert/strict";
import { openChannel } from "../channel/channel.ts";
import { msgpackCodec } from "../codecs/msgpack.ts";
import { spawnTransport } from "../transports/stdio.ts";
import { pythonMissing } from "./_python.ts";

const SCRIPT = new URL("./codecs/msgpack_peer.py", import.meta.url).pathname;
const missing = await pythonMissing("msgpack");

interface MsgpackPeer {
  describe(value: unknown): { types: unknown; echo: unknown };
  python(): Record<string, unknown>;
}

Deno.test({
  name: "interop/msgpack peer: Python gets dict/set/int/datetime and sends them back exactly",
  ignore: missing !== undefined,
  async fn() {
    const lines: string[] = [];
    const transport = spawnTransport("python3", {
      args: [SCRIPT],
      env: { PYTHONDONTWRITEBYTECODE: "1" },
      stderr: (line) => lines.push(line),
    });
    try {
      const channel = await openChannel<MsgpackPeer>(transport, {
        codec: msgpackCodec(),
        defaultTimeout: 10_000,
      });
      const value = {
        map: new Map<unknown, unknown>([[1, "one"], ["k", [2n ** 64n]]]),
        set: new Set(["a", 1]),
        small: 5n,
        big: -(2n ** 70n),
        at: new Date("2024-05-06T07:08:09.010Z"),
        plain: { n: 1, s: "x", bytes: new Uint8Array([0, 255]) },
      };
      const { types, echo } = await channel.remote.describe(value);
      assert.deepStrictEqual(types, {
        dict: {
          "'map'": { dict: { "1": "str", "'k'": { list: ["int"] } } },
          "'set'": { set: ["'a'", "1"] },
          "'small'": "int",
          "'big'": "int",
          "'at'": "datetime",
          "'plain'": { dict: { "'n'": "int", "'s'": "str", "'bytes'": "bytes" } },
        },
      });
      // Back in JavaScript: a dict with a non-string key is a Map again, and ints that fit
      // the safe range are numbers (5n left as ext 0x42 but Python's 5 is a plain int).
      assert.deepStrictEqual(echo, { ...value, small: 5 });
      assert.deepStrictEqual(await channel.remote.python(), {
        "int keys": new Map([[1, "one"], [2, "two"]]),
        set: new Set([1, 2, 3]),
        small: 5,
        big: 2n ** 64n,
        "negative big": -(2n ** 70n),
        at: new Date("2024-05-06T07:08:09.010Z"),
      });
      await channel.close();
      assert.equal((await transport.status).code, 0, lines.join("\n"));
    } finally {
      await transport.close();
    }
  },
});
