// A worker that writes to stdout in every way a module can: with "--at-load", a console.log
// and a Deno.stdout write before serveWorker; `print` writes from a handler by the route asked.
import process from "node:process";
import { serveWorker } from "../serve_worker.ts";

/** How a handler writes to stdout. */
export type PrintRoute = "console" | "Deno.stdout" | "node:process";

const encoder = new TextEncoder();

if (Deno.args.includes("--at-load")) {
  console.log("worker starting up");
  Deno.stdout.writeSync(encoder.encode("raw bytes at load\n"));
}
if (Deno.args.includes("--node-at-load")) process.stdout.write("node says hi\n");
if (Deno.args.includes("--crash-at-load")) throw new Error("boom at load");

const handlers = {
  print({ text, how }: { text: string; how: PrintRoute }): string {
    if (how === "console") console.log(text);
    else if (how === "Deno.stdout") Deno.stdout.writeSync(encoder.encode(text + "\n"));
    else process.stdout.write(text + "\n");
    return "printed";
  },
  echo: <T>(value: T): T => value,
};

/** The API this worker serves. */
export type NoisyApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
