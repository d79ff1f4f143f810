// The child of node_rows.mjs: a real Node process forked by a real Node parent, echoing every
// IPC message it receives (the request's id comes back with its payload).

import process from "node:process";

process.on("message", (message) => process.send(message));
