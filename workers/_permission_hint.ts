// Deno says which flag a denied operation needs ("Requires read access to "/data/x", run
// again with the --allow-read flag"), but a worker's permissions come from spawnWorker's
// `permissions` option: translate the one into the other, for the errors the parent sees.

const DENIED = /Requires (\w+) access to "([^"]*)"/;
/** What a hint starts with, so that it is added once. */
const HINT_START = "grant it to the worker with spawnWorker(";

/**
 * The `spawnWorker` option that grants what `text` (an error message or a stderr line) says
 * was denied, as a sentence; `undefined` when `text` reports no denied permission.
 */
export function permissionHint(text: string): string | undefined {
  const match = DENIED.exec(text);
  if (match === null) return undefined;
  const [, kind, target] = match;
  const grant = target === "" ? "true" : `[${JSON.stringify(target)}]`;
  return `${HINT_START}module, { permissions: { ${kind}: ${grant} } })`;
}

/** Adds the hint to a permission error's message (once); any other error is left alone. */
export function withPermissionHint(error: unknown): unknown {
  if (!(error instanceof Error) || error.message.includes(HINT_START)) return error;
  const hint = permissionHint(error.message);
  if (hint !== undefined) error.message += `: ${hint}`;
  return error;
}
