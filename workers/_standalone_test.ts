import assert from "node:assert/strict";
import { standaloneRefusal } from "./_standalone.ts";

const module = { name: "_echo_worker.ts", specifier: "file:///app/_echo_worker.ts" };

Deno.test("workers/standalone: a deno compile binary refuses a worker module, saying the ways", () => {
  const err = standaloneRefusal(true, module);
  assert.ok(err instanceof Deno.errors.NotSupported);
  assert.match(err.message, /worker module _echo_worker\.ts as a process/);
  assert.match(err.message, /deno compile: Deno\.execPath\(\) is the program itself/);
  assert.match(err.message, /\{ thread: true \}/);
  assert.match(err.message, /--include/);
  assert.match(err.message, /command: "deno", args: \["run", <permission flags>, "file:\/\/\/app/);
  assert.match(err.message, /codec: structuredCodec\(\)/);
});

Deno.test("workers/standalone: deno itself runs worker modules", () => {
  assert.equal(Deno.build.standalone, false);
  assert.equal(standaloneRefusal(Deno.build.standalone, module), undefined);
});
