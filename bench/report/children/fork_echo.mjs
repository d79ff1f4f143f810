// What a Node-minded Deno user would write: node:child_process fork() IPC. The parent forks
// this file with Deno itself (Deno's fork runs the module under its Node compatibility layer).
// Requests are {id, method, params}; a message without an id is a notification (counted).

import process from "node:process";

let notes = 0;
process.on("message", (message) => {
  if (message.id === undefined) {
    notes++;
    return;
  }
  process.send({ id: message.id, result: message.method === "noted" ? notes : message.params });
});
