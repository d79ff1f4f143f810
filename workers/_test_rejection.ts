// Test helper: what a promise rejected with, for assertions on the error's class and fields.

/** The reason `promise` rejected with; throws if it fulfilled instead. */
export async function rejection(promise: PromiseLike<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error("Expected a rejection");
}
