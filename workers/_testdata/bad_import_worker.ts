// A worker module with a typo in an import of the package (`workers/serv` for
// `workers/serve`): Deno fails to load it, explains the typo on the first stderr line, then
// lists every export of the package, more lines than a short tail. The specifier is built so
// that `deno check` of the repository does not stop at it.
const specifier = ["@conduit/ipc", "workers", "serv"].join("/");
const { serveWorker } = await import(specifier);

await serveWorker({ echo: (value: unknown) => value });
