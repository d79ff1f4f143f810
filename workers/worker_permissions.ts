/**
 * What a worker module may do: {@linkcode WorkerPermissions}, turned into `deno run` flags.
 *
 * @module
 */

import { WORKER_ENV, WORKER_SOCKET_ENV } from "./worker_env.ts";

/**
 * Deno permissions for a worker module, as `deno run` flags: `true` grants all
 * (`--allow-net`), a list grants those (`--allow-read=/data,/tmp`), `false` or absent grants
 * nothing. The worker gets no permission you do not list, and never a prompt.
 *
 * @example
 * ```ts
 * import type { WorkerPermissions } from "@conduit/ipc/workers";
 * import assert from "node:assert/strict";
 *
 * const permissions: WorkerPermissions = { read: ["/data"], net: false };
 * assert.deepEqual(permissions.read, ["/data"]);
 * ```
 */
export interface WorkerPermissions {
  /** `--allow-read`. @default {false} */
  read?: boolean | readonly (string | URL)[];
  /** `--allow-write`. @default {false} */
  write?: boolean | readonly (string | URL)[];
  /** `--allow-net` (hosts, `host:port`). @default {false} */
  net?: boolean | readonly string[];
  /** `--allow-env` (variable names). @default {false} */
  env?: boolean | readonly string[];
  /** `--allow-run` (programs). @default {false} */
  run?: boolean | readonly (string | URL)[];
  /** `--allow-sys` (API names such as `hostname`). @default {false} */
  sys?: boolean | readonly string[];
  /** `--allow-ffi` (library paths). @default {false} */
  ffi?: boolean | readonly (string | URL)[];
  /** `--allow-import` (hosts to import code from). @default {false} */
  import?: boolean | readonly string[];
}

/** The `deno run` flags for `permissions`. */
export function permissionFlags(permissions: WorkerPermissions): string[] {
  const flags: string[] = [];
  for (const [key, value] of Object.entries(permissions)) {
    if (value === undefined || value === false) continue;
    if (!PERMISSION_NAMES.has(key)) {
      throw new TypeError(`Unknown permission "${key}": expected one of ${[...PERMISSION_NAMES]}`);
    }
    if (value === true) {
      flags.push(`--allow-${key}`);
      continue;
    }
    const list = (value as readonly (string | URL)[]).map((item) =>
      item instanceof URL ? decodeURIComponent(item.pathname) : item
    );
    for (const item of list) {
      if (item.includes(",")) {
        throw new TypeError(`permissions.${key} entries cannot contain ",": got "${item}"`);
      }
    }
    // An empty list grants nothing, as `false` does; `--allow-x=` would grant everything.
    if (list.length > 0) flags.push(`--allow-${key}=${list.join(",")}`);
  }
  return flags;
}

const PERMISSION_NAMES = new Set(["read", "write", "net", "env", "run", "sys", "ffi", "import"]);

/** `permissions` plus reading the variable that tells the worker it is one. */
export function withWorkerEnvGrant(permissions: WorkerPermissions): WorkerPermissions {
  return { ...permissions, env: withGrant(permissions.env, WORKER_ENV) };
}

/**
 * `permissions` plus what connecting to the Unix socket at `path` takes (Deno checks read,
 * write and net) and reading the variable that names it.
 */
export function withSocketGrants(
  permissions: WorkerPermissions,
  path: string,
): WorkerPermissions {
  return {
    ...permissions,
    read: withGrant(permissions.read, path),
    write: withGrant(permissions.write, path),
    net: withGrant(permissions.net, `unix:${path}`),
    env: withGrant(permissions.env, WORKER_SOCKET_ENV),
  };
}

/** Adds `item` to a permission unless it already grants everything. */
function withGrant<T extends string | URL>(
  current: boolean | readonly T[] | undefined,
  item: T,
): boolean | readonly T[] {
  return current === true ? true : [...(Array.isArray(current) ? current : []), item];
}

/**
 * `permissions` as a Web Worker's `deno.permissions`: every permission named, the ones not
 * granted as `false`, so a thread gets no more than a process would.
 */
export function threadPermissions(permissions: WorkerPermissions): Deno.PermissionOptionsObject {
  permissionFlags(permissions); // The same checks: known names, no "," in a list entry.
  const result: Record<string, boolean | (string | URL)[]> = {};
  for (const name of PERMISSION_NAMES) {
    const value = permissions[name as keyof WorkerPermissions];
    result[name] = value === true
      ? true
      : Array.isArray(value) && value.length > 0
      ? [...value]
      : false;
  }
  return result as Deno.PermissionOptionsObject;
}
