// A NATS peer's Reset reason is the peer's text: the error it becomes quotes it escaped, as
// conduit's messages quote every peer's words (docs/guarantees.md).

import assert from "node:assert/strict";
import { createInbox } from "@nats-io/transport-node";
import { TransportClosedError } from "../errors.ts";
import { natsServerTest } from "./_test_nats_server.ts";
import { connectNats } from "./nats.ts";
import { decode, encodeHello, HEADER_BYTES, Kind, message, PROTOCOL } from "./_nats_wire.ts";

natsServerTest(
  "nats: a peer's Reset reason is escaped in the error it becomes",
  async (server) => {
    const [peerNc, clientNc] = await Promise.all([server.connect(), server.connect()]);
    const inbox = createInbox();
    const opened = Promise.withResolvers<void>();
    const clientInbox = Promise.withResolvers<string>();
    const own = peerNc.subscribe(inbox, {
      callback: (_error, msg) => {
        if (decode(msg.data)?.kind === Kind.Open) opened.resolve();
      },
    });
    const hellos = peerNc.subscribe("reset", {
      max: 1,
      callback: (_error, msg) => {
        clientInbox.resolve(JSON.parse(msg.string()).inbox as string);
        msg.respond(
          encodeHello({ protocol: PROTOCOL, inbox, window: 1 << 20, heartbeat: 60_000 }),
        );
      },
    });
    await peerNc.flush();
    const client = await connectNats(clientNc, "reset");
    await opened.promise;
    const reason = new TextEncoder().encode("bye\n2099-01-01 INFO forged line\x1b[2J");
    const reset = message(Kind.Reset, 0, reason.length);
    reset.set(reason, HEADER_BYTES);
    peerNc.publish(await clientInbox.promise, reset);
    await peerNc.flush();
    const read = await client.readable.getReader().read().catch((e) => e);
    own.unsubscribe();
    hellos.unsubscribe();
    await client.close().catch(() => {});
    assert.ok(read instanceof TransportClosedError, String(read));
    // deno-lint-ignore no-control-regex
    assert.doesNotMatch(read.message, /[\n\x1b]/, JSON.stringify(read.message));
  },
);
