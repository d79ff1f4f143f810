/**
 * One instance of the service of `nats_pool_demo.ts`: it counts primes in ranges, on calls
 * that reach it over NATS. The demo starts three of these (and later a fourth), each in its
 * own process:
 *
 *   deno run -A examples/_nats_service.ts <nats server> <instance id>
 *
 * It serves with `serve()` over a `listenNats` listener, prints `ready` once it listens, and
 * runs until it is stopped (SIGTERM: a graceful close, announced to the pool) or killed.
 *
 * @module
 */

import { connect } from "@nats-io/transport-node";
import { serve } from "@conduit/ipc/channel";
import { jsonCodec } from "@conduit/ipc/codecs/json";
import { listenNats } from "@conduit/ipc/transports/nats";
import { countPrimes, type Range } from "./_primes.ts";

/** The service's subject on NATS. */
export const SUBJECT = "demo.primes";

/** The service's methods. */
export interface PrimeServiceApi {
  /** How many primes lie in the range, and which instance counted them. */
  countPrimes(range: Range): { instance: string; count: number };
}

if (import.meta.main) {
  const [server, instance] = Deno.args;
  const nc = await connect({ servers: server });
  const handlers = {
    countPrimes: (range: Range) => ({ instance, count: countPrimes(range) }),
  };
  // serve(): one channel per connection the listener yields, closed gracefully on SIGTERM.
  const service = serve(await listenNats(nc, SUBJECT, { queue: SUBJECT, instance }), {
    codec: jsonCodec(),
    handlers,
  });
  Deno.addSignalListener("SIGTERM", async () => {
    await service.close();
    await nc.close();
    Deno.exit(0);
  });
  console.log("ready");
  await service.finished;
}
