// Full-jitter exponential backoff: the agent redialing the control plane, and every download that retries (the control plane's build download, the agent's build cache).

export interface BackoffOptions {
  /** First ceiling, in milliseconds (default 1000). */
  initialMs: number;
  /** Largest ceiling, in milliseconds (default 30000). */
  maxMs: number;
}

export const DEFAULT_BACKOFF: BackoffOptions = { initialMs: 1_000, maxMs: 30_000 };

/** The delay before redial number `attempt` (0-based): uniform in [0, min(max, initial·2^attempt)), whole ms. */
export function backoffDelayMs(attempt: number, options: BackoffOptions = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const ceiling = Math.min(options.maxMs, options.initialMs * 2 ** Math.min(attempt, 30));
  return Math.floor(random() * ceiling);
}
