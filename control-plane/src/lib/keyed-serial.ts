// Runs asynchronous work one at a time per key, in the order it was asked for. Code that read
// and wrote the database synchronously ran uninterrupted between a check and its write; with an
// asynchronous store, two requests for one key (a session, a project, a socket) can interleave at
// every await. Work for one key queues behind the work before it; other keys run meanwhile.

export class KeyedSerial<K = string> {
  /** The last task of each key with work queued or running (its entry removed when it settles). */
  private readonly tails = new Map<K, Promise<unknown>>();

  /** How many keys have work queued or running. */
  get activeKeys(): number {
    return this.tails.size;
  }

  /**
   * Runs task once every task asked for earlier with this key has settled (fulfilled or not);
   * answers what it answers. A task's failure is its caller's alone: the next task still runs.
   */
  run<T>(key: K, task: () => Promise<T> | T): Promise<T> {
    const previous = this.tails.get(key);
    const result = previous === undefined ? settleOf(task) : previous.then(() => settleOf(task), () => settleOf(task));
    const tail = result.then(
      () => undefined,
      () => undefined,
    );
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return result;
  }
}

/** Calls task now, turning a synchronous throw into a rejection. */
function settleOf<T>(task: () => Promise<T> | T): Promise<T> {
  try {
    return Promise.resolve(task());
  } catch (err) {
    return Promise.reject(err instanceof Error ? err : new Error(String(err)));
  }
}
