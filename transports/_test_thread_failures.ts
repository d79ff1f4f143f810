// The test both thread transports run: a worker that dies (an uncaught error, `self.close()`,
// `terminate()`) fails every pending call of a channel over the transport with a typed error.

import assert from "node:assert/strict";
import { ConnectionClosedError } from "../channel/errors.ts";
import { openChannel } from "../channel/mod.ts";
import { rawCodec } from "../codecs/raw.ts";
import type { ServiceApi } from "./_testdata/web_worker_service.ts";
import type { Transport } from "./types.ts";

const serviceUrl = new URL("./_testdata/web_worker_service.ts", import.meta.url);

/**
 * Runs the service worker three times, killing it a different way each time, and checks that
 * every pending call fails with a ConnectionClosedError whose causes say why and name `label`.
 *
 * @param query The worker URL's query (`?over=ring` serves over a shared ring).
 * @param connect The parent's transport to a started service worker.
 * @param label Part of the transport's error messages.
 */
export async function assertDeathsFailPendingCalls(
  query: string,
  connect: (worker: Worker) => Transport,
  label: string,
): Promise<void> {
  for (const how of ["crash", "quit", "terminate"] as const) {
    const worker = new Worker(new URL(query, serviceUrl), { type: "module" });
    const channel = await openChannel<ServiceApi>(connect(worker), { codec: rawCodec() });
    const one = new Uint8Array([1]);
    assert.deepEqual(await channel.remote.echo(one), one);
    const pending = [channel.remote.hang(one), channel.remote.hang(one)];
    if (how === "terminate") worker.terminate();
    else pending.push(channel.remote[how](one));
    for (const call of pending) {
      const error = await call.then(() => undefined, (e) => e);
      assert.ok(error instanceof ConnectionClosedError, `${how}: got ${error}`);
      const causes = [];
      for (let e: unknown = error; e instanceof Error; e = e.cause) causes.push(e.message);
      const expected = {
        crash: /crashed on purpose/,
        quit: /closed itself/,
        terminate: /terminated/,
      };
      assert.match(causes.join(" <- "), expected[how]);
      assert.ok(causes.some((m) => m.includes(label)), causes.join(" <- "));
    }
    await assert.rejects(channel.remote.echo(one), ConnectionClosedError);
    await channel.close();
    worker.terminate();
  }
}
