// A scripted Language Server written with vscode-jsonrpc (the library VS Code's LSP client and
// servers are built on), over stdio, for partial_results_test.ts. It sends partial results as
// vscode-jsonrpc does: `connection.sendProgress(type, partialResultToken, value)`.
//
//   items { count, partialResultToken }   count partial results [1], [2], ..., then ["final"]
//   fails { partialResultToken }          two partial results, then error -32801
//   endless { partialResultToken }        a partial result every 10 ms until cancelled; then
//                                         prints "endless: cancelled" to stderr

//
// vscode-jsonrpc is one of the npm programs locked apart (testdata/npm_programs.lock): the test
// runs this file with that lock, and the import is dynamic so that `deno check` of the package
// does not resolve it into deno.lock (its types are the few written below).

import process from "node:process";
import { VSCODE_JSONRPC } from "../_test_npm.ts";

type Token = string | number;
interface CancellationToken {
  readonly isCancellationRequested: boolean;
}
interface MessageConnection {
  onRequest<P>(method: string, handler: (params: P, cancel: CancellationToken) => unknown): void;
  onNotification(method: string, handler: () => void): void;
  sendProgress(type: unknown, token: Token, value: unknown): Promise<void>;
  listen(): void;
}
const {
  createMessageConnection,
  ProgressType,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
} = await import(`${VSCODE_JSONRPC}/node`);

const partial = new ProgressType();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const connection: MessageConnection = createMessageConnection(
  new StreamMessageReader(process.stdin),
  new StreamMessageWriter(process.stdout),
);

connection.onRequest<{ count: number; partialResultToken: Token }>("items", async (params) => {
  for (let i = 1; i <= params.count; i++) {
    await connection.sendProgress(partial, params.partialResultToken, [i]);
    await sleep(5);
  }
  return ["final"];
});

connection.onRequest<{ partialResultToken: Token }>("fails", async (params) => {
  await connection.sendProgress(partial, params.partialResultToken, ["a"]);
  await connection.sendProgress(partial, params.partialResultToken, ["b"]);
  throw new ResponseError(-32801, "the document changed");
});

connection.onRequest<{ partialResultToken: Token }>("endless", async (params, cancel) => {
  for (let i = 1; !cancel.isCancellationRequested; i++) {
    await connection.sendProgress(partial, params.partialResultToken, [i]);
    await sleep(10);
  }
  process.stderr.write("endless: cancelled\n");
  throw new ResponseError(-32800, "cancelled");
});

connection.onNotification("exit", () => process.exit(0));
connection.listen();
