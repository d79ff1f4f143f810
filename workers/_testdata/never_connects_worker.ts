// A worker module that stays alive and never calls serveWorker: it never connects to its socket.
setInterval(() => {}, 1_000);
