import assert from "node:assert/strict";
import { parse, Root } from "protobufjs";
import { protobufCodec } from "../codecs/protobuf.ts";
import { BENCH_PROTO, BENCH_PROTO_JSON } from "./_bench_proto.ts";

Deno.test("bench/proto: the committed JSON descriptor is the parsed .proto schema", () => {
  assert.deepStrictEqual(
    JSON.parse(JSON.stringify(BENCH_PROTO_JSON)),
    JSON.parse(JSON.stringify(parse(BENCH_PROTO).root.toJSON())),
  );
});

Deno.test("bench/proto: codecs from the descriptor and from the .proto text agree on bytes", () => {
  const root = Root.fromJSON(BENCH_PROTO_JSON);
  const value = {
    id: 7,
    method: "echoSmall",
    params: { userId: 42, fields: ["name", "email"] },
    deadline: 1.5,
  };
  const fromJson = protobufCodec({ proto: root, type: "bench.Call" });
  const fromText = protobufCodec({ proto: BENCH_PROTO, type: "bench.Call" });
  assert.equal(fromJson.name, fromText.name);
  assert.deepStrictEqual(fromJson.encode(value), fromText.encode(value));
  assert.deepStrictEqual(fromText.decode(fromJson.encode(value)), value);
});
