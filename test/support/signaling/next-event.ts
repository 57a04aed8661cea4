// Test support: await an endpoint's next typed event instead of sleeping.
import { once, type EventEmitter } from 'node:events';

type EventMap<T> = Record<keyof T, unknown[]>;

/** The arguments of the next `name` event. */
export async function nextEvent<T extends EventMap<T>, K extends keyof T & string>(emitter: EventEmitter<T>, name: K): Promise<T[K]> {
  return (await once(emitter as EventEmitter, name)) as T[K];
}

/** Every emission of `name`, in order, from now on. */
export function recordEvents<T extends EventMap<T>, K extends keyof T & string>(emitter: EventEmitter<T>, name: K): T[K][] {
  const seen: T[K][] = [];
  (emitter as EventEmitter).on(name, (...args: unknown[]) => seen.push(args as T[K]));
  return seen;
}
