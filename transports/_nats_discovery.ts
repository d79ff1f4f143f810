// Service discovery on NATS (part of conduit-nats/1, written down in transports/nats.ts's
// module doc): the subjects a listener instance answers on besides its own, the JSON it
// answers with, and the listener side of it. The client side is workers/nats_service_pool.ts.

import { PROTOCOL } from "./_nats_wire.ts";
import type { NatsClient, NatsMessage, NatsSubscription } from "./_nats_client.ts";

/** The subjects of discovery for a service subject. */
export interface DiscoverySubjects {
  /** Probes (requests with a reply subject): every instance answers with an {@linkcode Instance}. */
  discover: string;
  /** Instances publish an {@linkcode Announcement} here when they start and stop. */
  announce: string;
  /** The subject one instance takes connections on. */
  instance(id: string): string;
}

/** The discovery subjects of `subject`. */
export function discoverySubjects(subject: string): DiscoverySubjects {
  return {
    discover: `${subject}.discover`,
    announce: `${subject}.announce`,
    instance: (id) => `${subject}.instance.${id}`,
  };
}

/** What an instance tells about itself. */
export interface Instance {
  protocol: string;
  /** Its id, unique among the instances of the service. */
  instance: string;
  /** The subject that reaches this instance alone. */
  subject: string;
}

/** An instance that started (`up`) or stops (`down`). */
export interface Announcement extends Instance {
  event: "up" | "down";
}

/** Whether `id` can be a subject token (an instance id). */
export function isInstanceId(id: string): boolean {
  return /^[A-Za-z0-9_-]{1,64}$/.test(id);
}

/** Encodes an instance's description or announcement. */
export function encodeInstance(value: Instance | Announcement): Uint8Array {
  return new TextEncoder().encode(JSON.stringify(value));
}

/** Decodes an instance's description or announcement; `undefined` when it is not one. */
export function decodeInstance(payload: Uint8Array): Instance | Announcement | undefined {
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder().decode(payload));
  } catch {
    return undefined;
  }
  if (typeof value !== "object" || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (
    v.protocol !== PROTOCOL || typeof v.instance !== "string" || !isInstanceId(v.instance) ||
    typeof v.subject !== "string" || v.subject === "" ||
    (v.event !== undefined && v.event !== "up" && v.event !== "down")
  ) {
    return undefined;
  }
  return v as unknown as Instance | Announcement;
}

/**
 * The listener side: answers probes on the discovery subject, takes connections on the
 * instance's own subject (with `onHello`), announces itself now and its end in `stop()`.
 */
export class DiscoveryResponder {
  readonly #nc: NatsClient;
  readonly #subjects: DiscoverySubjects;
  readonly #self: Instance;
  readonly #subscriptions: NatsSubscription[];

  constructor(
    nc: NatsClient,
    subject: string,
    id: string,
    onHello: (error: Error | null, msg: NatsMessage) => void,
  ) {
    this.#nc = nc;
    this.#subjects = discoverySubjects(subject);
    this.#self = { protocol: PROTOCOL, instance: id, subject: this.#subjects.instance(id) };
    const description = encodeInstance(this.#self);
    this.#subscriptions = [
      nc.subscribe(this.#subjects.instance(id), { callback: onHello }),
      nc.subscribe(this.#subjects.discover, {
        callback: (error, msg) => {
          if (error === null && msg.reply !== undefined) {
            try {
              msg.respond(description);
            } catch {
              // The NATS connection closed.
            }
          }
        },
      }),
    ];
    this.#announce("up");
  }

  /** Stops answering and announces that this instance is gone. */
  stop(): void {
    for (const subscription of this.#subscriptions) {
      try {
        subscription.unsubscribe();
      } catch {
        // The NATS connection is closed already.
      }
    }
    this.#announce("down");
  }

  #announce(event: "up" | "down"): void {
    try {
      this.#nc.publish(this.#subjects.announce, encodeInstance({ ...this.#self, event }));
    } catch {
      // The NATS connection is closed: nobody can hear it.
    }
  }
}

/** What a {@linkcode DiscoveryWatcher} reports. */
export interface DiscoveryEvents {
  /** An instance answered a probe or announced its start (reported on every answer). */
  found(instance: Instance): void;
  /** An instance announced its end. */
  gone(instance: Instance): void;
}

/**
 * The client side: probes `<subject>.discover` now and every `interval` ms, and listens to
 * `<subject>.announce`, reporting what it hears to `events`: only instances whose subject is
 * `<subject>.instance.<id>`, as every listener's is.
 */
export class DiscoveryWatcher {
  readonly #nc: NatsClient;
  readonly #subjects: DiscoverySubjects;
  readonly #inbox: string;
  readonly #subscriptions: NatsSubscription[];
  readonly #timer: ReturnType<typeof setInterval>;

  constructor(
    nc: NatsClient,
    subject: string,
    options: { interval: number; inboxPrefix: string },
    events: DiscoveryEvents,
  ) {
    this.#nc = nc;
    this.#subjects = discoverySubjects(subject);
    this.#inbox = `${options.inboxPrefix}.${crypto.randomUUID().replaceAll("-", "")}`;
    const heard = (error: Error | null, msg: NatsMessage) => {
      if (error !== null) return;
      const instance = decodeInstance(msg.data);
      // An instance takes connections on its own subject under this service, nowhere else:
      // a description naming another subject (the queue subject, another service) is a lie
      // that would have the pool dial it, once per made-up id.
      if (
        instance === undefined || instance.subject !== this.#subjects.instance(instance.instance)
      ) {
        return;
      }
      if ("event" in instance && instance.event === "down") events.gone(instance);
      else events.found(instance);
    };
    this.#subscriptions = [
      nc.subscribe(this.#inbox, { callback: heard }),
      nc.subscribe(this.#subjects.announce, { callback: heard }),
    ];
    this.probe();
    this.#timer = setInterval(() => this.probe(), options.interval);
  }

  /** Asks every instance to answer. */
  probe(): void {
    try {
      this.#nc.publish(this.#subjects.discover, new Uint8Array(0), { reply: this.#inbox });
    } catch {
      // The NATS connection is closed (the pool fails its connections then).
    }
  }

  /** Stops probing and listening. */
  stop(): void {
    clearInterval(this.#timer);
    for (const subscription of this.#subscriptions) {
      try {
        subscription.unsubscribe();
      } catch {
        // The NATS connection is closed already.
      }
    }
  }
}
