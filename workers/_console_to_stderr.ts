// While a worker serves over stdout, every console method that would print to stdout prints
// to stderr instead: one stray console.log would otherwise land between two frames and break
// the stream. console.error, warn, trace and assert already print to stderr; group and
// groupEnd print through console.log, so their labels and indentation follow it.

type Method =
  | "log"
  | "info"
  | "debug"
  | "dir"
  | "dirxml"
  | "table"
  | "count"
  | "countReset"
  | "time"
  | "timeLog"
  | "timeEnd";

/**
 * Redirects console output from stdout to stderr; returns a function that undoes it. It uses
 * nothing outside its own body but globals: its source also runs as the worker preload
 * (`_quiet_preload.ts`).
 */
export function consoleToStderr(): () => void {
  const methods: readonly Method[] = [
    "log",
    "info",
    "debug",
    "dir",
    "dirxml",
    "table",
    "count",
    "countReset",
    "time",
    "timeLog",
    "timeEnd",
  ];
  const saved = new Map<Method, unknown>();
  for (const method of methods) saved.set(method, console[method]);
  const error = console.error;
  const warn = console.warn;
  const log = (...data: unknown[]) => error(...data);
  const inspected = (item: unknown, options?: Deno.InspectOptions) =>
    error(Deno.inspect(item, { colors: false, ...options }));
  const counts = new Map<string, number>();
  const timers = new Map<string, number>();
  const elapsed = (label: string) =>
    `${label}: ${(performance.now() - timers.get(label)!).toFixed(3)}ms`;

  console.log = log;
  console.info = log;
  console.debug = log;
  console.dir = inspected;
  console.dirxml = (...data: unknown[]) => error(...data);
  // Deno's table layout is private to its console: print the data itself instead.
  console.table = (data: unknown) => inspected(data);
  console.count = (label = "default") => {
    const n = (counts.get(label) ?? 0) + 1;
    counts.set(label, n);
    error(`${label}: ${n}`);
  };
  console.countReset = (label = "default") => {
    if (counts.delete(label)) return;
    warn(`Count for '${label}' does not exist`);
  };
  console.time = (label = "default") => {
    if (timers.has(label)) return warn(`Timer '${label}' already exists`);
    timers.set(label, performance.now());
  };
  console.timeLog = (label = "default", ...data: unknown[]) => {
    if (!timers.has(label)) return warn(`Timer '${label}' does not exist`);
    error(elapsed(label), ...data);
  };
  console.timeEnd = (label = "default") => {
    if (!timers.has(label)) return warn(`Timer '${label}' does not exist`);
    error(elapsed(label));
    timers.delete(label);
  };

  return () => {
    for (const [method, fn] of saved) {
      (console as unknown as Record<Method, unknown>)[method] = fn;
    }
  };
}
