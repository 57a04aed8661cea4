// A listener that cannot open (port taken, no permission, an address this machine does not have)
// is an operator's problem, not a crash: `pixelfleet serve` prints one line naming the config key
// and exits with LISTEN_FAILED_EXIT_CODE, no stack.

/** EX_UNAVAILABLE (sysexits.h): the service cannot be offered; the unit restarts it on failure. */
export const LISTEN_FAILED_EXIT_CODE = 69;

export type Listener = 'http' | 'grpc';

const REASONS: Record<string, { key: 'port' | 'host'; reason: string }> = {
  EADDRINUSE: { key: 'port', reason: 'the address is already in use (another process listens there)' },
  EACCES: { key: 'port', reason: 'permission denied (ports below 1024 need privileges)' },
  EADDRNOTAVAIL: { key: 'host', reason: 'this machine has no such address' },
};

export class ListenError extends Error {
  override readonly name = 'ListenError';
  constructor(
    /** The config key to change, e.g. `http.port`. */
    readonly key: string,
    readonly address: string,
    reason: string,
  ) {
    super(`cannot listen on ${address} (config key "${key}"): ${reason}`);
  }
}

/**
 * Maps a listen failure to a ListenError naming the key, or returns undefined for anything else.
 * grpc-js reports bind failures only in its message (`No address added … [listen EADDRINUSE: …]`).
 */
export function listenErrorOf(listener: Listener, host: string, port: number, err: unknown): ListenError | undefined {
  const e = err as { code?: unknown; message?: unknown };
  const code = typeof e.code === 'string' && e.code in REASONS ? e.code : Object.keys(REASONS).find((c) => typeof e.message === 'string' && e.message.includes(c));
  if (code === undefined) return undefined;
  const { key, reason } = REASONS[code]!;
  return new ListenError(`${listener}.${key}`, host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`, reason);
}

/** Runs a listener's start; a listen failure becomes a ListenError, anything else is rethrown. */
export async function listenOrExplain<T>(listener: Listener, host: string, port: number, start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (err) {
    throw listenErrorOf(listener, host, port, err) ?? err;
  }
}
