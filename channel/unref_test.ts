import assert from "node:assert/strict";

const script = new URL("./_testdata/unref_channel.ts", import.meta.url).pathname;

async function run(mode: "ref" | "unref"): Promise<string> {
  const output = await new Deno.Command(Deno.execPath(), {
    args: ["run", "--no-check", script, mode],
    stdout: "piped",
    stderr: "inherit",
  }).output();
  assert.equal(output.code, 0);
  return new TextDecoder().decode(output.stdout).trim();
}

Deno.test("channel: unref() lets the process end with a call pending; by default its deadline holds it", async () => {
  // Nothing else holds either process: an in-memory transport has no OS handle.
  assert.equal(await run("ref"), "rejected: DeadlineExceededError");
  assert.equal(await run("unref"), "");
});
