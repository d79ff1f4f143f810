// comlink against conduit between threads, in one run with interleaved rounds: the report's
// "Threads" section (bench/report/_threads.ts, which says what each row measures) on its own.
//
//   deno run -A bench/threads_ratios.ts [rounds=5]

import { measureThreads, threadsMarkdown } from "./report/_threads.ts";

const rounds = Number(Deno.args[0] ?? 5);
const result = await measureThreads(rounds, (line) => console.error(line));
console.log(threadsMarkdown(result).join("\n"));
