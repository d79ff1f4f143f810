/**
 * Runs every example in this directory (each `*.ts` file but this one and `_` helpers) as a
 * subprocess with the permission flags its header's `deno run … examples/<name>` line gives
 * (so that the line a reader copies is the one tested), one at a time, each with a timeout.
 * Exits 1 if any example fails or times out.
 *
 *   deno run -A examples/run_all.ts [--timeout <ms>]
 *
 * @module
 */

const DEFAULT_TIMEOUT_MS = 60_000;
/** Examples run with telemetry on (exporting nowhere), so that what they check is checked. */
const ENV: Record<string, Record<string, string>> = {
  "tracing.ts": {
    OTEL_DENO: "true",
    OTEL_TRACES_EXPORTER: "none",
    OTEL_METRICS_EXPORTER: "none",
    OTEL_LOGS_EXPORTER: "none",
  },
};

const dir = new URL(".", import.meta.url);
const root = new URL("..", dir).pathname;
const timeoutArg = Deno.args.indexOf("--timeout");
const timeoutMs = timeoutArg >= 0 ? Number(Deno.args[timeoutArg + 1]) : DEFAULT_TIMEOUT_MS;
if (!(timeoutMs > 0)) throw new RangeError(`--timeout must be a positive number of ms`);

const examples: string[] = [];
for await (const entry of Deno.readDir(dir)) {
  const name = entry.name;
  if (entry.isFile && name.endsWith(".ts") && name !== "run_all.ts" && !name.startsWith("_")) {
    examples.push(name);
  }
}
examples.sort();
if (examples.length === 0) {
  console.error("no examples found");
  Deno.exit(1);
}

/** The flags of the `deno run` line in `name`'s header, between `run` and the file. */
async function documentedFlags(name: string): Promise<string[]> {
  const source = await Deno.readTextFile(new URL(name, dir));
  const line = source.match(new RegExp(`^ \\*.*\\bdeno run (.*?)\\s*examples/${name}\\b`, "m"));
  if (line === null) {
    throw new Error(`examples/${name}: its header has no "deno run … examples/${name}" line`);
  }
  return line[1].split(/\s+/).filter((flag) => flag !== "");
}

const failures: string[] = [];
for (const name of examples) {
  const flags = await documentedFlags(name);
  console.log(`::: examples/${name} (${flags.join(" ")})`);
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-prompt", ...flags, new URL(name, dir).pathname],
    cwd: root,
    env: ENV[name] ?? {},
    stdin: "null",
    signal: AbortSignal.timeout(timeoutMs),
  }).spawn();
  const status = await child.status;
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  if (status.success) {
    console.log(`ok   examples/${name} (${seconds}s)`);
  } else {
    const why = status.signal
      ? `killed by ${status.signal} (timeout ${timeoutMs} ms?)`
      : `exit code ${status.code}`;
    console.log(`FAIL examples/${name}: ${why} (${seconds}s)`);
    failures.push(name);
  }
}

console.log(`${examples.length - failures.length} of ${examples.length} examples passed`);
if (failures.length > 0) Deno.exit(1);
