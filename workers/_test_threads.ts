// Test helper: checking that a test terminated every Web Worker it made. Deno's sanitizers
// do not count a live Worker, and /proc cannot tell this test's threads from those of the
// other test modules `deno test --parallel` runs in the same process; so the test's Workers
// are recorded as they are made (each test module has its own globals).

/**
 * A `Deno.test` that fails if a Web Worker made while it ran was not terminated by its end
 * (conduit terminates a thread worker once its channel has closed, so a closed handle or
 * pool leaves none).
 */
export function threadLeakFreeTest(name: string, fn: () => Promise<void>): void {
  Deno.test(name, async () => {
    const made: Worker[] = [];
    const ended = new WeakSet<Worker>();
    const Original = globalThis.Worker;
    const terminate = Original.prototype.terminate;
    globalThis.Worker = class extends Original {
      constructor(specifier: string | URL, options?: WorkerOptions) {
        super(specifier, options);
        made.push(this);
      }
    };
    Original.prototype.terminate = function (this: Worker): void {
      ended.add(this);
      terminate.call(this);
    };
    try {
      await fn();
    } finally {
      globalThis.Worker = Original;
      Original.prototype.terminate = terminate;
    }
    const left = made.filter((worker) => !ended.has(worker)).length;
    if (left > 0) throw new Error(`${left} Web Worker(s) left running after "${name}"`);
  });
}
