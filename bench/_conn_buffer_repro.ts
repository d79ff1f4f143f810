// A plain Deno accept loop, no conduit: each connection reads into a buffer of its own, as any
// server does. Connections come and go, and their freed buffers pile up as V8 external memory
// until a garbage collection frees them (V8's ArrayBuffer sweeper runs after it, concurrently,
// so even a forced GC does not free them at once); RSS keeps the high-water mark. With
// --shared, one buffer serves every connection and RSS barely moves: the growth is the
// per-connection buffers' (the allocator and V8's heuristics), not a leak in conduit or Deno.
//
//   deno run -A --v8-flags=--expose-gc bench/_conn_buffer_repro.ts [--shared] [connections=4000]

const shared = Deno.args.includes("--shared");
const total = Number(Deno.args.find((arg) => /^\d+$/.test(arg)) ?? 4000);
const gc = (globalThis as { gc?: () => void }).gc;
const one = new Uint8Array(64 * 1024);

const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
const { port } = listener.addr as Deno.NetAddr;
const serving = (async () => {
  for await (const conn of listener) {
    (async () => {
      const buffer = shared ? one : new Uint8Array(64 * 1024);
      try {
        while ((await conn.read(buffer)) !== null) { /* discard */ }
      } catch {
        // Reset.
      }
      conn.close();
    })();
  }
})().catch(() => {});

const mib = (bytes: number) => (bytes / 1024 / 1024).toFixed(1).padStart(6);
const show = (done: number, collect = false) => {
  const before = Deno.memoryUsage();
  let line = `${String(done).padStart(6)} connections: RSS ${mib(before.rss)} MiB, external ` +
    `${mib(before.external)} MiB`;
  if (collect) {
    // Only at the end: a forced collection on the way would hide the pile-up.
    gc?.();
    const after = Deno.memoryUsage();
    line += ` (after a full GC: external ${mib(after.external)} MiB, RSS ${mib(after.rss)} MiB)`;
  }
  console.log(line);
};

console.log(
  `${shared ? "one shared buffer" : "a 64 KiB buffer per connection"}, Deno ${Deno.version.deno}`,
);
show(0);
for (let done = 0; done < total;) {
  await Promise.all(Array.from({ length: 20 }, async () => {
    const conn = await Deno.connect({ hostname: "127.0.0.1", port });
    await conn.write(new Uint8Array(100));
    conn.close();
  }));
  done += 20;
  if (done % (total / 8) === 0) show(done);
}
await new Promise((resolve) => setTimeout(resolve, 200));
show(total, true);
listener.close();
await serving;
