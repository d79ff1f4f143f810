// A channel over an in-memory pair with one call that is never answered before its 2 s deadline:
// with `unref` as its argument the channels' timers must not keep this process alive.
import { openChannel } from "../channel.ts";
import { jsonCodec } from "../../codecs/json.ts";
import { memoryPair } from "../../transports/memory.ts";

const [a, b] = memoryPair();
const handlers = { never: () => new Promise<never>(() => {}) };
const [client, server] = await Promise.all([
  openChannel<typeof handlers>(a, { codec: jsonCodec() }),
  openChannel(b, { codec: jsonCodec(), handlers }),
]);
// Both ends: the handler's side keeps the call's deadline too.
if (Deno.args[0] === "unref") { for (const channel of [client, server]) channel.unref(); }
client.remote.never(undefined, { timeout: 2000 }).then(
  () => console.log("answered"),
  (error) => console.log(`rejected: ${error.name}`),
);
