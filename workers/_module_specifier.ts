// The worker module spawnWorker runs. A relative string ("./w.ts") would resolve against the
// working directory, not against the module that wrote it as `import` does; the calling
// module's URL cannot be known reliably (a stack trace is not, and a WorkerPool spawns long
// after its caller returned), so a relative string is refused with the fix in the message.

import { pathToFileURL } from "node:url";

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

/** `module` as a URL, for `new Worker()`: an absolute path becomes a `file:` URL. */
export function moduleUrl(module: string | URL): URL {
  const specifier = moduleSpecifier(module);
  return SCHEME.test(specifier) ? new URL(specifier) : pathToFileURL(specifier);
}

/** A worker's default name: its module's file name, or its command's. */
export function workerName(target: string | URL): string {
  if (/^(?:data|blob):/.test(String(target))) return "inline module";
  const path = target instanceof URL ? decodeURIComponent(target.pathname) : target;
  return path.slice(path.lastIndexOf("/") + 1) || path;
}
