// What a worker's permission error suggests: the spawnWorker option that grants it, and nothing
// for a permission that option has no name for.

import assert from "node:assert/strict";
import { permissionHint, withPermissionHint } from "./spawn_worker_options.ts";

Deno.test("permission hint: names the option that grants what Deno denied", () => {
  assert.equal(
    permissionHint('Requires read access to "/data/x", run again with the --allow-read flag'),
    'grant it to the worker with spawnWorker(module, { permissions: { read: ["/data/x"] } })',
  );
  assert.equal(
    permissionHint('Requires env access to "", run again with the --allow-env flag'),
    "grant it to the worker with spawnWorker(module, { permissions: { env: true } })",
  );
});

Deno.test("permission hint: none for a permission spawnWorker's option cannot name", () => {
  // Deno asks for all permissions for some special files (/proc/self/*): `all` is no key of
  // `permissions`, and a hint naming it would be refused as unknown.
  const text = 'Requires all access to "/proc/self/fd", run again with the --allow-all flag';
  assert.equal(permissionHint(text), undefined);
  const error = new Error(text);
  assert.equal((withPermissionHint(error) as Error).message, text);
});
