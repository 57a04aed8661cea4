// The spec's build-call limit: one accepted upload-file / distribute-file / set-active-build
// per `limits.buildCallWindowSeconds` per userId, shared between them. Only accepted calls use
// the window (callers check it after validation and auth). In memory: a restart forgets it.
import { ApiError } from '../errors';
import type { Clock } from '@pixelfleet/common';

/** `2 minutes` for 120 s: the wait the 429 message names, in whole minutes (at least 1). */
export function windowText(windowSeconds: number): string {
  const minutes = Math.max(1, Math.ceil(windowSeconds / 60));
  return `${minutes} minute${minutes === 1 ? '' : 's'}`;
}

export class BuildCallLimit {
  private readonly lastAccepted = new Map<string, number>();
  private readonly windowMs: number;

  constructor(
    private readonly clock: Clock,
    private readonly windowSeconds: number,
  ) {
    this.windowMs = windowSeconds * 1000;
  }

  /**
   * Uses the user's window, or throws 429 with `Retry-After` (seconds left). Answers the way to give
   * it back, for a call refused after all (its build moved meanwhile): only accepted calls use it.
   */
  take(userId: string): () => void {
    const now = this.clock.now();
    const last = this.lastAccepted.get(userId);
    if (last !== undefined && now - last < this.windowMs) {
      const retryAfter = Math.max(1, Math.ceil((last + this.windowMs - now) / 1000));
      throw new ApiError('buildCallRateLimited', { wait: windowText(this.windowSeconds) }, { 'retry-after': String(retryAfter) });
    }
    if (this.lastAccepted.size > 10_000) this.prune(now);
    this.lastAccepted.set(userId, now);
    return () => {
      if (this.lastAccepted.get(userId) !== now) return;
      if (last === undefined) this.lastAccepted.delete(userId);
      else this.lastAccepted.set(userId, last);
    };
  }

  private prune(now: number): void {
    for (const [userId, at] of this.lastAccepted) if (now - at >= this.windowMs) this.lastAccepted.delete(userId);
  }
}
