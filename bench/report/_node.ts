// Which real `node` the report's "Node peers" section runs: the machine's when it is recent
// enough, else the `node` npm package (a pinned version) installed into .tools/ by this bench
// set-up, never by a test. Without either the section says why it is missing.

const ROOT = new URL("../../", import.meta.url).pathname;
/** The oldest Node major whose fork IPC the report compares with. */
const MIN_NODE_MAJOR = 20;
/** The `node` npm package's version the set-up installs when the machine has no recent Node. */
const PINNED = "node@22.12.0";
const TOOLS_NODE = `${ROOT}.tools/node_modules/.bin/node`;

/** A Node binary found or installed, or why there is none. */
export type NodeBinary =
  | { path: string; version: string; source: string }
  | { path: undefined; reason: string };

/** Finds a Node of at least v20: `node` on PATH, then .tools/, else installs PINNED there. */
export async function findNode(): Promise<NodeBinary> {
  const found = await versionOf("node");
  if (found !== undefined && Number(/^v(\d+)/.exec(found)![1]) >= MIN_NODE_MAJOR) {
    return { path: "node", version: found, source: "the machine's (PATH)" };
  }
  const why = found === undefined ? "no node on PATH" : `node ${found} on PATH is too old`;
  let tools = await versionOf(TOOLS_NODE);
  if (tools === undefined) {
    const npm = await new Deno.Command("npm", {
      args: ["install", "--prefix", `${ROOT}.tools`, "--no-audit", "--no-fund", PINNED],
      stdout: "null",
      stderr: "piped",
    }).output().catch((error: Error) => error);
    if (npm instanceof Error || !npm.success) {
      const detail = npm instanceof Error ? npm.message : new TextDecoder().decode(npm.stderr);
      return { path: undefined, reason: `${why}, and npm install ${PINNED} failed: ${detail}` };
    }
    tools = await versionOf(TOOLS_NODE);
  }
  return tools === undefined
    ? { path: undefined, reason: `${why}, and the npm ${PINNED} does not run` }
    : { path: TOOLS_NODE, version: tools, source: `npm ${PINNED}` };
}

async function versionOf(binary: string): Promise<string | undefined> {
  try {
    const out = await new Deno.Command(binary, { args: ["--version"], stderr: "null" }).output();
    const version = new TextDecoder().decode(out.stdout).trim();
    return out.success && /^v\d+/.test(version) ? version : undefined;
  } catch {
    return undefined;
  }
}
