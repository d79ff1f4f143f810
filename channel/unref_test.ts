import assert from "node:assert/strict";

const script = new URL("./_testdata/unref_channel.ts", import.meta.url).pathname;

async function run(mode: "ref" | "unref" | "unref-timers"): Promise<string> {
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

Deno.test("channel: unref() lets go of the heartbeat and the idle timer too", async () => {
  // Their module loads once the channels open; unref() holds for them whenever it comes.
  assert.equal(await run("unref-timers"), "");
});
