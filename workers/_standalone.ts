// A binary made by `deno compile` is not deno: its `Deno.execPath()` is the app itself, so
// `deno run <module>` through it would start the app again (with the worker module as an
// argument), not the worker. spawnWorker refuses a module there and says the two ways that work.

/**
 * The error spawnWorker throws for a worker module in a `deno compile` binary, or `undefined`
 * when the module may run: `standalone` is `Deno.build.standalone`, a seam for the tests
 * (a compiled binary cannot be built without `denort`).
 */
export function standaloneRefusal(
  standalone: boolean,
  module: { name: string; specifier: string },
): Deno.errors.NotSupported | undefined {
  if (!standalone) return undefined;
  const { name, specifier } = module;
  return new Deno.errors.NotSupported(
    `spawnWorker cannot run the worker module ${name} as a process in a program made by ` +
      `deno compile: Deno.execPath() is the program itself (${Deno.execPath()}), not deno. ` +
      `Run it as a thread, spawnWorker(url, { thread: true }), with the module embedded by ` +
      `deno compile --include <module>; or run it with a deno installed on the machine, ` +
      `spawnWorker({ command: "deno", args: ["run", <permission flags>, ` +
      `${JSON.stringify(specifier)}] }, { codec: structuredCodec() })`,
  );
}
