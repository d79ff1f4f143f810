// A Web Worker answering postMessage: the in-process option a Deno user has. Requests are
// {id, method, params}; a message without an id is a notification (counted).

/// <reference lib="deno.worker" />

let notes = 0;
self.onmessage = (event: MessageEvent) => {
  const message = event.data;
  if (message.id === undefined) {
    notes++;
    return;
  }
  self.postMessage({ id: message.id, result: message.method === "noted" ? notes : message.params });
};
