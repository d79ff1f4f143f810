// Research for issue 12 (bench/worker_transport.ts, option "quiet"): a module run with
// `deno run --preload` before the user's worker module, which moves everything that would
// print to fd 1 — the console and `Deno.stdout` — to stderr, and keeps the real `Deno.stdout`
// for the channel under a global symbol (`quietStdout()` in _transport_worker.ts reads it).
// A `console.log` or `Deno.stdout.writeSync` in the user's module, at load or in a handler,
// then lands on stderr instead of between two frames.

const stdout = Deno.stdout;
Object.defineProperty(globalThis, Symbol.for("conduit.stdout"), { value: stdout });
Object.defineProperty(Deno, "stdout", { value: Deno.stderr, configurable: true, writable: true });
const toStderr = (...data: unknown[]) => console.error(...data);
console.log = toStderr;
console.info = toStderr;
console.debug = toStderr;
console.dir = (item: unknown) => console.error(Deno.inspect(item));
console.table = (data: unknown) => console.error(Deno.inspect(data));
