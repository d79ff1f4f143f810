/**
 * Running python3 from the interop tests: whether a module can be imported (tests install
 * nothing; .ci/run pip-installs msgpack and pyarrow), and a script's stdout.
 *
 * @module
 */

/** Why python3 cannot import `module` (for the skip message), or `undefined` when it can. */
export async function pythonMissing(module: string): Promise<string | undefined> {
  try {
    const { success } = await new Deno.Command("python3", {
      args: ["-c", `import ${module}`],
      stdin: "null",
      stdout: "null",
      stderr: "null",
    }).output();
    if (success) return undefined;
    const why = `python3 cannot import ${module} (pip install ${module})`;
    console.warn(`interop: skipping the ${module} tests: ${why}`);
    return why;
  } catch (err) {
    const why = `python3 could not be run: ${err instanceof Error ? err.message : err}`;
    console.warn(`interop: skipping the ${module} tests: ${why}`);
    return why;
  }
}

/** Runs `python3 script ...args`; returns its stdout, or fails with its stderr. */
export async function python(script: string, ...args: string[]): Promise<string> {
  const { success, stdout, stderr } = await new Deno.Command("python3", {
    args: [script, ...args],
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const text = new TextDecoder();
  if (!success) {
    throw new Error(`python3 ${script} ${args.join(" ")} failed:\n${text.decode(stderr)}`);
  }
  return text.decode(stdout);
}
