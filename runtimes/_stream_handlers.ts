// Handlers that stream, shared by the worker module (_worker.ts) and the cases that serve them
// themselves: a result stream (`count`) and a param stream (`sum`).

/** `count` yields 1 to `to`; `sum` adds the numbers it is given. */
export const streamHandlers = {
  async *count(to: number): AsyncIterable<number> {
    for (let i = 1; i <= to; i++) yield i;
  },
  async sum(items: AsyncIterable<number>): Promise<number> {
    let total = 0;
    for await (const item of items) total += item;
    return total;
  },
};
