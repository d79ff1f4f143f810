// Runs `deno doc --lint` on every entrypoint in deno.json's exports, each on its own: a type
// an entrypoint shows must be public from that entrypoint, not only from another one.
const { exports } = JSON.parse(await Deno.readTextFile(new URL("../deno.json", import.meta.url)));
const failed: string[] = [];
for (const entry of Object.values(exports as Record<string, string>)) {
  const { code, stderr } = await new Deno.Command(Deno.execPath(), {
    args: ["doc", "--lint", entry],
    cwd: new URL("..", import.meta.url),
  }).output();
  if (code !== 0) {
    failed.push(entry);
    await Deno.stderr.write(stderr);
  }
}
console.log(
  `deno doc --lint: ${Object.keys(exports).length - failed.length} entrypoints clean` +
    (failed.length ? `, failing: ${failed.join(" ")}` : ""),
);
if (failed.length) Deno.exit(1);
