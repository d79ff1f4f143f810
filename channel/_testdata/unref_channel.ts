// A channel over an in-memory pair with one call that is never answered before its 2 s deadline:
// with `unref` as its argument the channels' timers must not keep this process alive; with
// `unref-timers` neither must a heartbeat's and an idle timeout's, loaded as the channels open.
import { openChannel } from "../channel.ts";
import { jsonCodec } from "../../codecs/json.ts";
import { memoryPair } from "../../transports/memory.ts";

const [a, b] = memoryPair();
const handlers = { never: () => new Promise<never>(() => {}) };
const mode = Deno.args[0];
const timers = mode === "unref-timers"
  ? { heartbeat: { interval: 50, timeout: 5000 }, idleTimeout: 60_000 }
  : {};
const [client, server] = await Promise.all([
  openChannel<typeof handlers>(a, { codec: jsonCodec(), ...timers }),
  openChannel(b, { codec: jsonCodec(), handlers, ...timers }),
]);
// Both ends: the handler's side keeps the call's deadline too.
if (mode !== "ref") { for (const channel of [client, server]) channel.unref(); }
client.remote.never(undefined, { timeout: 2000 }).then(
  () => console.log("answered"),
  (error) => console.log(`rejected: ${error.name}`),
);
