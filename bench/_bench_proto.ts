// The benchmark payloads' Protobuf schema, alone in a module: a Protobuf peer loads it at
// start-up without the payload builders and the other codecs (spawn-to-first-reply).

/** The Protobuf schema equivalent to `BenchCall` and `BenchBatch` (`_codec_payloads.ts`). */
export const BENCH_PROTO = `
syntax = "proto3";
package bench;
message Params { uint32 user_id = 1; repeated string fields = 2; }
message Call { uint32 id = 1; string method = 2; Params params = 3; double deadline = 4; }
message Location { double lat = 1; double lon = 2; string city = 3; }
message Record {
  uint32 id = 1;
  string name = 2;
  string email = 3;
  bool active = 4;
  double score = 5;
  repeated string tags = 6;
  Location location = 7;
}
message Batch { repeated Record records = 1; }
`;

/**
 * `BENCH_PROTO` as the JSON descriptor protobufjs's `Root.toJSON()` gives for it, for
 * `Root.fromJSON`: building the schema from it skips tokenizing and parsing the `.proto` text
 * at start-up, as any program whose schema is fixed when it is written can do. Kept equal to
 * the parsed `BENCH_PROTO` by `_bench_proto_test.ts`. Not annotated as protobufjs's `INamespace`:
 * its `IField` lacks the `protoName` that `toJSON()` writes and `fromJSON` reads.
 */
export const BENCH_PROTO_JSON = {
  nested: {
    bench: {
      nested: {
        Params: {
          fields: {
            userId: { type: "uint32", id: 1, protoName: "user_id" },
            fields: { rule: "repeated", type: "string", id: 2 },
          },
        },
        Call: {
          fields: {
            id: { type: "uint32", id: 1 },
            method: { type: "string", id: 2 },
            params: { type: "Params", id: 3 },
            deadline: { type: "double", id: 4 },
          },
        },
        Location: {
          fields: {
            lat: { type: "double", id: 1 },
            lon: { type: "double", id: 2 },
            city: { type: "string", id: 3 },
          },
        },
        Record: {
          fields: {
            id: { type: "uint32", id: 1 },
            name: { type: "string", id: 2 },
            email: { type: "string", id: 3 },
            active: { type: "bool", id: 4 },
            score: { type: "double", id: 5 },
            tags: { rule: "repeated", type: "string", id: 6 },
            location: { type: "Location", id: 7 },
          },
        },
        Batch: { fields: { records: { rule: "repeated", type: "Record", id: 1 } } },
      },
    },
  },
};
