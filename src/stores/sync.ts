// Synchronous stores answer the async parts of the SessionStore contract
// with settled promises: a throw becomes a rejection, never an escape.

/** Runs `work` now and hands its outcome back as a promise. */
export function settled<T>(work: () => T): Promise<T> {
  try {
    return Promise.resolve(work())
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)))
  }
}
