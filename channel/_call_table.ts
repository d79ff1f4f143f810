// What the registries of calls in both directions share: the calls by id, the wire they talk
// through, the lifecycle and deadline timer they consult, and the peer's stream window.

import type { Deadlines } from "./_deadlines.ts";
import { IdTable } from "./_id_table.ts";
import type { Lifecycle } from "./_lifecycle.ts";
import type { PeerLimits, Wire } from "../wires/types.ts";

/** A registry of calls of one direction. */
export abstract class CallTable<T extends { readonly id: number }> {
  protected readonly wire: Wire;
  protected readonly life: Lifecycle;
  protected readonly deadlines: Deadlines;
  protected readonly calls: IdTable<T>;
  #peerWindow = 1;

  constructor(wire: Wire, life: Lifecycle, deadlines: Deadlines, ring: number) {
    this.wire = wire;
    this.life = life;
    this.deadlines = deadlines;
    this.calls = new IdTable(ring);
  }

  /** The calls in flight. */
  get size(): number {
    return this.calls.size;
  }

  /** The credit the peer grants each stream it receives. */
  get peerWindow(): number {
    return this.#peerWindow;
  }

  /** The peer's limits arrived. */
  setPeer(peer: PeerLimits): void {
    this.#peerWindow = peer.streamWindowBytes;
  }
}
