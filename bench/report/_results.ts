// The shape of results.json: every figure of the report.

import type { CodecSpeed } from "./_codec_speed.ts";
import type { ReportConfig } from "./_config.ts";
import type { Environment } from "./_env.ts";
import type { MachineResult } from "./_machine.ts";
import type { ThreadsResult } from "./_threads.ts";
import type { WorkersResult } from "./_workers.ts";
import type { NodePeersResult } from "./_node_rows.ts";
import type { StreamCell } from "./_streams.ts";
import type { TelemetryResult } from "./_telemetry.ts";
import type { SubjectResult } from "./_suite.ts";

/** One target of the issue, with what this run measured. */
export interface TargetResult {
  target: string;
  /** The figures, in words (e.g. "raw 1.32×, msgpack 1.61×"). */
  measured: string;
  met: boolean;
}

/** Everything one run measured. Times in ms, sizes in bytes unless the name says MiB. */
export interface ReportResults {
  environment: Environment;
  config: ReportConfig;
  payloads: Array<{ name: string; jsonBytes: number }>;
  parentPeakRssMiB: number;
  /** codec → payload → in-memory speed. */
  codecSpeed: Record<string, Record<string, CodecSpeed>>;
  suite: SubjectResult[];
  streams: StreamCell[];
  /** conduit against real Node fork IPC; absent from reports made before it existed. */
  nodePeers?: NodePeersResult;
  /** Raw calls against a bare Deno Unix socket; absent from older reports. */
  machine?: MachineResult;
  /** Worker spawn and a 100 MB stream against a bare Deno child; absent from older reports. */
  workers?: WorkersResult;
  threads?: ThreadsResult;
  /** Calls with Deno's OpenTelemetry off and on; absent from older reports. */
  telemetry?: TelemetryResult;
  targets: TargetResult[];
}
