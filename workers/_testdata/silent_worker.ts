// A worker module that forgets to call serveWorker: it does its work and exits with code 0.
console.error("silent worker ran");
