// A scripted Language Server written with vscode-jsonrpc (the library VS Code's LSP client and
// servers are built on), over stdio, for partial_results_test.ts. It sends partial results as
// vscode-jsonrpc does: `connection.sendProgress(type, partialResultToken, value)`.
//
//   items { count, partialResultToken }   count partial results [1], [2], ..., then ["final"]
//   fails { partialResultToken }          two partial results, then error -32801
//   endless { partialResultToken }        a partial result every 10 ms until cancelled; then
//                                         prints "endless: cancelled" to stderr

import process from "node:process";
import {
  createMessageConnection,
  type MessageConnection,
  ProgressType,
  ResponseError,
  StreamMessageReader,
  StreamMessageWriter,
} from "vscode-jsonrpc/node";

type Token = string | number;
const partial = new ProgressType<unknown[]>();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const connection: MessageConnection = createMessageConnection(
  new StreamMessageReader(process.stdin),
  new StreamMessageWriter(process.stdout),
);

connection.onRequest("items", async (params: { count: number; partialResultToken: Token }) => {
  for (let i = 1; i <= params.count; i++) {
    await connection.sendProgress(partial, params.partialResultToken, [i]);
    await sleep(5);
  }
  return ["final"];
});

connection.onRequest("fails", async (params: { partialResultToken: Token }) => {
  await connection.sendProgress(partial, params.partialResultToken, ["a"]);
  await connection.sendProgress(partial, params.partialResultToken, ["b"]);
  throw new ResponseError(-32801, "the document changed");
});

connection.onRequest("endless", async (params: { partialResultToken: Token }, cancel) => {
  for (let i = 1; !cancel.isCancellationRequested; i++) {
    await connection.sendProgress(partial, params.partialResultToken, [i]);
    await sleep(10);
  }
  process.stderr.write("endless: cancelled\n");
  throw new ResponseError(-32800, "cancelled");
});

connection.onNotification("exit", () => process.exit(0));
connection.listen();
