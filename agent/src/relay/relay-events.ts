// Typed listener sets for the relay's events. A throwing listener is logged and skipped: events
// fire from inside werift callbacks, where an exception would break werift's own bookkeeping.

export type EventMap = Record<string, unknown[]>;

export class Listeners<E extends EventMap> {
  private readonly sets: { [K in keyof E]?: Set<(...args: E[K]) => void> } = {};

  constructor(private readonly onListenerError: (event: keyof E, err: unknown) => void) {}

  /** Adds a listener; returns its unsubscribe function. */
  on<K extends keyof E>(event: K, listener: (...args: E[K]) => void): () => void {
    const set = (this.sets[event] ??= new Set());
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  emit<K extends keyof E>(event: K, ...args: E[K]): void {
    for (const listener of [...(this.sets[event] ?? [])]) {
      try {
        listener(...args);
      } catch (err) {
        this.onListenerError(event, err);
      }
    }
  }

  clear(): void {
    for (const key of Object.keys(this.sets) as (keyof E)[]) delete this.sets[key];
  }
}
