// The handlers of a JSON-RPC channel as one table: those given at open, those added later with
// handle(), and the catch-all for requests no handler serves. The engine sees one object whose
// every served method is the same router, which finds the handler by the context's method at
// each call, so a handler added or removed after open takes effect at once.

import type { CallContext } from "../channel/mod.ts";

/** A handler as the engine calls it: the param, then the call's (or notification's) context. */
export type AnyJsonRpcHandler = (params: never, ctx: CallContext) => unknown;

/** The catch-all for requests no handler serves. */
export type FallbackHandler = (method: string, params: unknown, ctx: CallContext) => unknown;

interface Entry {
  readonly fn: (this: unknown, params: unknown, ctx: CallContext) => unknown;
  readonly self: unknown;
}

/** The handlers of one channel, by method. */
export class HandlerTable {
  /** What the engine serves: every method this table serves, as the router. */
  readonly handlers: object;
  readonly #entries = new Map<string, Entry>();
  readonly #fallback: FallbackHandler | undefined;

  constructor(initial: object | undefined, fallback: FallbackHandler | undefined) {
    this.#fallback = fallback;
    if (initial !== undefined) this.#addAll(initial);
    const route = this.#route;
    const descriptor = { value: route, writable: false, enumerable: true, configurable: true };
    this.handlers = new Proxy(Object.create(null), {
      getOwnPropertyDescriptor: (_, method) =>
        typeof method === "string" && (this.#entries.has(method) || fallback !== undefined)
          ? descriptor
          : undefined,
    });
  }

  /** Whether a handler serves `method` (the catch-all aside). */
  serves(method: string): boolean {
    return this.#entries.has(method);
  }

  /** Serves `method` with `fn` from now on; returns what stops it (if still `fn`'s). */
  add(method: string, fn: AnyJsonRpcHandler): () => void {
    if (typeof method !== "string") {
      throw new TypeError(`A method name is a string, got ${typeof method}`);
    }
    if (typeof fn !== "function") {
      throw new TypeError(`The handler of "${method}" is not a function: ${typeof fn}`);
    }
    const entry: Entry = { fn: fn as Entry["fn"], self: undefined };
    this.#entries.set(method, entry);
    return () => {
      if (this.#entries.get(method) === entry) this.#entries.delete(method);
    };
  }

  readonly #route = (params: unknown, ctx: CallContext): unknown => {
    const entry = this.#entries.get(ctx.method);
    if (entry !== undefined) return entry.fn.call(entry.self, params, ctx);
    if (this.#fallback !== undefined) return this.#fallback(ctx.method, params, ctx);
    // Removed between its arrival and now.
    throw Object.assign(new Error(`No method named "${ctx.method}"`), { code: -32601 });
  };

  /**
   * Takes the handler object's methods as the engine would serve them (ChannelOptions.handlers):
   * functions that are its own data properties or its class's, never `constructor`; each is
   * called with the object as `this`.
   */
  #addAll(object: object): void {
    const prototype = Object.getPrototypeOf(object);
    const sources = prototype === null || prototype === Object.prototype
      ? [object]
      : [prototype, object];
    for (const source of sources) {
      for (const [method, descriptor] of Object.entries(Object.getOwnPropertyDescriptors(source))) {
        const fn = descriptor.value;
        if (method === "constructor" || method === "__proto__" || typeof fn !== "function") {
          continue;
        }
        this.#entries.set(method, { fn, self: object });
      }
    }
  }
}
