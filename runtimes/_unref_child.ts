// A program for the channel cases (_channel_cases.ts): two channels over an in-memory pair, with a
// heartbeat and an idle timeout, one call answered and one pending under a 60 s deadline, both
// channels unref'd. It must end at once by itself; with CONDUIT_TRACE=1 its frames go to stderr.

import { openChannel } from "../channel/mod.ts";
import { memoryPair } from "../transports/memory.ts";

const [a, b] = memoryPair();
const timers = { heartbeat: { interval: 50, timeout: 5000 }, idleTimeout: 60_000 };
const handlers = { ping: () => "pong", never: () => new Promise<never>(() => {}) };
const [caller, server] = await Promise.all([
  openChannel<typeof handlers>(a, timers),
  openChannel(b, { handlers, ...timers }),
]);
console.log(await caller.remote.ping());
for (const channel of [caller, server]) channel.unref();
caller.remote.never(undefined, { timeout: 60_000 }).then(
  () => console.log("answered"),
  (error) => console.log(`rejected: ${error.name}`),
);
