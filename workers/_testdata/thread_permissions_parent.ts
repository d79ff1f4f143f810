// A parent run with Deno's worker-options feature on (by flag or config), which says so with
// `unstableWorkerOptions: true` when given "--say-on" (needed without -A): a thread worker
// with `permissions: { read: [this directory] }` reads a file here and is refused one
// elsewhere. Prints what it saw as JSON, for thread_permissions_test.ts.
import { spawnWorker } from "../spawn_worker.ts";

const here = new URL(".", import.meta.url);
await using worker = await spawnWorker<{ read(path: string): string }>(
  new URL("./permission_worker.ts", import.meta.url),
  {
    thread: true,
    permissions: { read: [here] },
    ...(Deno.args.includes("--say-on") ? { unstableWorkerOptions: true } : {}),
  },
);
const inside = await worker.remote.read(new URL("./permission_worker.ts", here).pathname);
const outside = await worker.remote.read(new URL("../../deno.json", here).pathname).then(
  () => "read",
  (error) => `${error.name}: ${error.message}`,
);
console.log(JSON.stringify({ inside: inside.length > 0, outside }));
