// Typed listener sets: the one event mechanism of every package (the relay, the worker registry,
// the session service, the event log). A throwing listener is reported and skipped, so it can
// neither stop the listeners after it nor break its emitter half-way (a registry that already sent
// Welcome, a werift callback with bookkeeping still to do).

/** Event name → the arguments its listeners take. */
export type EventMap = Record<string, unknown[]>;

export type ListenerErrorHandler<E extends EventMap> = (event: keyof E, err: unknown) => void;

export class Listeners<E extends EventMap> {
  private readonly sets: { [K in keyof E]?: Set<(...args: E[K]) => void> } = {};

  constructor(private readonly onListenerError: ListenerErrorHandler<E>) {}

  /** Adds a listener; returns its unsubscribe function. */
  on<K extends keyof E>(event: K, listener: (...args: E[K]) => void): () => void {
    const set = (this.sets[event] ??= new Set());
    set.add(listener);
    return () => {
      set.delete(listener);
    };
  }

  /** Calls every listener of the event, in the order they were added; a listener added meanwhile waits for the next emit. */
  emit<K extends keyof E>(event: K, ...args: E[K]): void {
    const set = this.sets[event];
    if (set === undefined || set.size === 0) return;
    for (const listener of [...set]) {
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
