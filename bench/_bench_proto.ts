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
