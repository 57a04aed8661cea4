// SQLite answers synchronously (better-sqlite3 runs each statement on the calling thread, in
// microseconds); the store's interfaces answer with promises, because PostgreSQL answers over a
// socket. A SQLite repository implements the synchronous twin of its interface (`Sync<T>`) and
// the store hands out `promised(repository)`: the same methods, each returning a settled promise.
// Its own tests and the test seeders keep calling it synchronously.

/** The interface T with every promise-returning method returning its value directly. */
export type Sync<T> = {
  [K in keyof T]: T[K] extends (...args: infer A) => Promise<infer R> ? (...args: A) => R : T[K];
};

/** An interface whose every member is a method answering with a promise (what promised() can stand for). */
export type AllAsync<T> = { [K in keyof T]: (...args: never[]) => Promise<unknown> };

/**
 * The repository's methods (its class's own and inherited ones), each turning a return into a
 * resolved promise and a throw into a rejected one, so that no caller sees a synchronous throw
 * from an asynchronous interface.
 */
export function promised<T extends AllAsync<T>>(repository: Sync<T>): T {
  const methods: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
  for (let proto = Object.getPrototypeOf(repository) as object | null; proto !== null && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    for (const name of Object.getOwnPropertyNames(proto)) {
      const method = (repository as Record<string, unknown>)[name];
      if (name === 'constructor' || name in methods || typeof method !== 'function') continue;
      methods[name] = (...args: unknown[]) => {
        try {
          return Promise.resolve(method.apply(repository, args));
        } catch (err) {
          return Promise.reject(err instanceof Error ? err : new Error(String(err)));
        }
      };
    }
  }
  return methods as unknown as T;
}
