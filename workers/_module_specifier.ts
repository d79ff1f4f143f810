// The worker module spawnWorker runs. A relative string ("./w.ts") would resolve against the
// working directory, not against the module that wrote it as `import` does; the calling
// module's URL cannot be known reliably (a stack trace is not, and a WorkerPool spawns long
// after its caller returned), so a relative string is refused with the fix in the message.

/** Whether `path` is absolute, on POSIX or Windows. */
const ABSOLUTE = /^(?:\/|[A-Za-z]:[\\/]|\\\\)/;
/** A URL scheme (two letters at least, so that `C:` stays a drive). */
const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]+:/;

/**
 * The specifier `deno run` gets for `module`: a URL's `href`, an absolute path or a URL string
 * as given.
 *
 * @throws {TypeError} When `module` is a relative path.
 */
export function moduleSpecifier(module: string | URL): string {
  if (module instanceof URL) return module.href;
  if (typeof module !== "string" || module === "") {
    throw new TypeError(`The worker module must be a URL or a path, got ${String(module)}`);
  }
  if (ABSOLUTE.test(module) || SCHEME.test(module)) return module;
  throw new TypeError(
    `The worker module "${module}" is a relative path: it would resolve against the working ` +
      `directory, not against your module as an import does. Pass ` +
      `new URL(${JSON.stringify(module.startsWith(".") ? module : `./${module}`)}, ` +
      `import.meta.url), or an absolute path`,
  );
}
