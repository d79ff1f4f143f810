// A worker that imports serveWorker from the package root, as a program that also spawns
// workers might: the root's serveWorker loads the worker's side when it is called.
import { serveWorker } from "../../mod.ts";

const handlers = { ping: (): string => "pong" };

/** The API this worker serves. */
export type RootWorkerApi = typeof handlers;

if (import.meta.main) await serveWorker(handlers);
