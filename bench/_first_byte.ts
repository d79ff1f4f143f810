// The bare baseline of bench/spawn_time.ts: one byte to stdout.
Deno.stdout.writeSync(new Uint8Array([1]));
