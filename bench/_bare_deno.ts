// The start-up baseline of the worker benchmarks: bare Deno running a one-line program.

/** A one-line program that writes one byte to stdout. */
const PROGRAM = "Deno.stdout.writeSync(new Uint8Array([1]))";

/**
 * Spawns `deno eval` of a one-line program and resolves when its first byte arrives: the
 * time, in ms, a worker's spawn-to-first-reply is compared against.
 */
export async function bareFirstByte(): Promise<number> {
  const started = performance.now();
  const child = new Deno.Command(Deno.execPath(), {
    args: ["eval", PROGRAM],
    stdin: "null",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = child.stdout.getReader();
  await reader.read();
  const elapsed = performance.now() - started;
  await reader.cancel();
  await child.status;
  return elapsed;
}
