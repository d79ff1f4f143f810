// The runtime seam's cases (_runtime.ts), registered by each runner beside _cases.ts: timers'
// ref, the environment, and file URLs made as the runtime's own node:url makes them.

import assert from "node:assert/strict";
import { fileURLToPath, pathToFileURL } from "node:url";
import {
  connectionError,
  connectionGone,
  envVar,
  fileUrlToPath,
  MAX_TIMER_DELAY,
  pathToFileUrl,
  refTimer,
  runtimeName,
  runtimeOs,
  timerDelay,
  within,
} from "../_runtime.ts";
import type { RuntimeCase } from "./_cases.ts";

/** The runtime seam's cases every runner registers, in order. */
export const runtimeCases: RuntimeCase[] = [];

function add(name: string, fn: () => void | Promise<void>): void {
  runtimeCases.push({ name, fn });
}

add("_runtime: refTimer lets a timer go and holds it again", () => {
  const timer = setTimeout(() => {}, 60_000);
  // Node's and Bun's handles tell (hasRef); Deno's numbers do not, so there it must not throw.
  const handle = timer as unknown as { hasRef?(): boolean };
  try {
    refTimer(timer, false);
    if (handle.hasRef) assert.equal(handle.hasRef(), false);
    refTimer(timer, true);
    if (handle.hasRef) assert.equal(handle.hasRef(), true);
  } finally {
    clearTimeout(timer);
  }
});

add("_runtime: timerDelay keeps a delay within what every runtime's timers keep", async () => {
  assert.equal(MAX_TIMER_DELAY, 2 ** 31 - 1);
  assert.deepEqual([2 ** 40, Infinity, 5, 0, -5, NaN].map(timerDelay), [
    MAX_TIMER_DELAY,
    MAX_TIMER_DELAY,
    5,
    0,
    0,
    0,
  ]);
  // The longest kept delay does not fire at once.
  let fired = false;
  const timer = setTimeout(() => fired = true, timerDelay(2 ** 40));
  await new Promise((resolve) => setTimeout(resolve, 20));
  clearTimeout(timer);
  assert.equal(fired, false);
});

add("_runtime: within gives the value, or late after the wait, and leaves no timer", async () => {
  assert.equal(await within(Promise.resolve("value"), 60_000, "late"), "value");
  assert.equal(await within(new Promise<string>(() => {}), 10, "late"), "late");
  // A rejection passes through, and its timer goes too.
  const [set, clear] = [globalThis.setTimeout, globalThis.clearTimeout];
  const pending = new Set<unknown>();
  globalThis.setTimeout = ((fn: () => void, ms?: number, ...args: unknown[]) => {
    const timer = set(fn, ms, ...(args as []));
    pending.add(timer);
    return timer;
  }) as typeof setTimeout;
  globalThis.clearTimeout = ((timer?: number) => {
    pending.delete(timer);
    clear(timer);
  }) as typeof clearTimeout;
  try {
    await assert.rejects(within(Promise.reject(new Error("no")), 60_000, "late"), /no/);
  } finally {
    [globalThis.setTimeout, globalThis.clearTimeout] = [set, clear];
  }
  assert.equal(pending.size, 0, "a timer left behind");
});

add("_runtime: connectionGone tells a connection that went away from other failures", () => {
  const reset = runtimeName() === "deno"
    ? new Deno.errors.ConnectionReset("reset")
    : Object.assign(new Error("reset"), { code: "ECONNRESET" });
  assert.equal(connectionGone(reset), true);
  assert.equal(connectionGone(connectionError("ConnectionRefused", "refused")), false);
  assert.equal(connectionGone(new Error("Too many open files")), false);
  assert.equal(connectionGone(undefined), false);
});

add("_runtime: envVar reads the environment, runtimeOs names the OS", () => {
  // Every runner here runs with the environment readable (deno test -A).
  assert.equal(typeof envVar("PATH"), "string");
  assert.equal(envVar("CONDUIT_SURELY_UNSET_VARIABLE"), undefined);
  assert.ok(
    ["linux", "darwin", "windows", "freebsd", "netbsd", "openbsd"].includes(runtimeOs()),
    runtimeOs(),
  );
});

/** Characters a path may hold that a URL escapes, decodes or splits on. */
const TRICKY = [
  " ",
  "%",
  "%41",
  "#",
  "?",
  "\\",
  "\n",
  "\r",
  "\t",
  "é",
  "😀",
  ":",
  ";",
  "@",
  "&=+$,",
  "[]{}|^`",
  "'\"<>~",
  "//",
  "..",
];

/** Absolute POSIX paths made of tricky parts, one and two at a time. */
function trickyPaths(): string[] {
  const paths = ["/", "/a", "/a/", "//a"];
  for (const first of TRICKY) {
    paths.push(`/x${first}y`, `/${first}/z`);
    for (const second of TRICKY) paths.push(`/d${first}/${second}f`);
  }
  return paths;
}

add("_runtime: file URLs of POSIX paths name node:url's files, both ways", () => {
  if (runtimeOs() === "windows") return; // node:url makes Windows paths there.
  for (const path of trickyPaths()) {
    // The spelling may differ (node:url escapes `[]|^~` too), the file may not.
    const url = pathToFileUrl(path, false);
    const theirs = pathToFileURL(path);
    assert.equal(
      fileURLToPath(url).replace(/\/+/g, "/"), // node:url also drops repeated slashes
      fileURLToPath(theirs),
      `${JSON.stringify(path)}: ${url.href}`,
    );
    assert.equal(fileUrlToPath(theirs, false), fileURLToPath(theirs), theirs.href);
    assert.equal(fileUrlToPath(url, false), fileURLToPath(url), url.href);
    // Both collapse `//` and `..` as the path would resolve; a path with neither comes back.
    if (!/\/\/|\/\.\.(\/|$)/.test(path)) assert.equal(fileUrlToPath(url, false), path, url.href);
  }
  // What a URL must escape to keep a path whole: `%`, `#`, `?`, a backslash, a newline.
  assert.equal(pathToFileUrl("/a b/%41#?\\\n", false).href, "file:///a%20b/%2541%23%3F%5C%0A");
});

add("_runtime: file URLs of Windows paths, drive and UNC, both ways", () => {
  // As Node 24's node:url spells them with { windows: true } (it makes `C:\\` `file:///C://`).
  const vectors: [string, string][] = [
    ["C:\\", "file:///C:/"],
    ["C:\\a b\\#x?y%z", "file:///C:/a%20b/%23x%3Fy%25z"],
    ["d:/mixed\\seps", "file:///d:/mixed/seps"],
    ["\\\\server\\share\\x y", "file://server/share/x%20y"],
  ];
  for (const [path, href] of vectors) {
    assert.equal(pathToFileUrl(path, true).href, href, path);
    assert.equal(fileUrlToPath(new URL(href), true), path.replaceAll("/", "\\"), href);
  }
});

add("_runtime: a file URL that names no path here is a TypeError", () => {
  const refused: [string, boolean][] = [
    ["http://host/a", false],
    ["file://host/a", false],
    ["file:///a%2Fb", false],
    ["file:///a%2fb", true],
    ["file:///C:/a%5Cb", true],
    ["file:///no/drive", true],
  ];
  for (const [href, windows] of refused) {
    assert.throws(() => fileUrlToPath(new URL(href), windows), TypeError, href);
  }
  assert.throws(() => pathToFileUrl("relative/path", false), TypeError);
  assert.throws(() => pathToFileUrl("C:relative", true), TypeError);
  assert.throws(() => pathToFileUrl("/posix/on/windows", true), TypeError);
});
