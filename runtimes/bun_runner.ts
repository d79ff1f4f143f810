// The cross-runtime cases (_cases.ts and the _*_cases.ts beside it) on Bun's runner:
// `bun test ./runtimes/bun_runner.ts`.
// Not named `_test.ts`: `deno test` runs deno_test.ts.

import { nodeAndBunCases } from "./_all_cases.ts";

/** The part of `bun:test` this file uses. */
interface BunTest {
  test(name: string, fn: () => void | Promise<void>): void;
}

// `bun:test` exists only on Bun: a specifier in a variable keeps `deno check` from resolving it,
// so this file type-checks and lints with the rest of the repository.
const BUN_TEST = "bun:test";
const { test } = await import(BUN_TEST) as BunTest;

for (const { name, fn } of nodeAndBunCases) test(`runtimes (bun): ${name}`, fn);
