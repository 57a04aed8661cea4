// The lifecycle's timers, all on the injected clock: a placed session's maximum run time (counted
// from Starting: a slot is held from then on) and its connect timeout (placed → viewer connected),
// a Running session's idle (AFK) timeout measured from the viewer input its worker reports, the
// resume grace of a session whose media legs dropped, the deadline of a stop the worker never
// confirms, and the grace an unreachable worker's sessions get before they are declared lost.
// The timers decide when; the lifecycle, told through SessionTimerExpiry, decides what ending means.
import type { Clock, TimerHandle } from '@pixelfleet/common';
import { WORKER_LOST_GRACE_MS } from '../workers/worker-link';

/** How long an agent gets to stop an app gracefully before it kills the process tree (sent with every StopSession). */
export const STOP_GRACE_MS = 10_000;
export { WORKER_LOST_GRACE_MS } from '../workers/worker-link';
/** Past the stop grace, how long a Terminating session waits for its connected worker's confirmation before its slot is freed anyway. */
export const STOP_CONFIRM_MARGIN_MS = 30_000;

/** Why a session's timer ended it. */
export type SessionExpiryCause = 'maxRunTime' | 'afkTimeout' | 'connectTimeout' | 'streamLost' | 'warmInstanceAged';

export interface SessionTimerExpiry {
  /**
   * The session reached its maximum run time, its viewer sent no input for the AFK timeout, never
   * connected within the connect timeout, or its media legs stayed down past the resume grace; or
   * a warm instance nobody claimed reached its maximum age.
   */
  sessionExpired(sessionId: string, cause: SessionExpiryCause): void;
  /** A Terminating session's worker did not confirm the stop in time. */
  stopUnconfirmed(sessionId: string): void;
  /** The worker stayed unreachable for its grace. */
  workerLost(workerId: string): void;
}

/**
 * The latest a placed session can end: its placement plus its maxRunTime (the run timer placed()
 * arms, from the stored placement after a restart too). Undefined when it has no cap (0 or none)
 * or was never placed. Other timers (idle, connect, a lost stream) only end it sooner.
 */
export function latestEndMs(s: { placedAt?: number; maxRunTime: number | undefined }): number | undefined {
  if (s.placedAt === undefined || s.maxRunTime === undefined || s.maxRunTime <= 0) return undefined;
  return s.placedAt + s.maxRunTime * 60_000;
}

export class SessionTimers {
  private readonly runTimers = new Map<string, TimerHandle>();
  private readonly connectTimers = new Map<string, TimerHandle>();
  private readonly streamLostTimers = new Map<string, TimerHandle>();
  private readonly stopTimers = new Map<string, TimerHandle>();
  private readonly afkTimers = new Map<string, TimerHandle>();
  private readonly lostTimers = new Map<string, TimerHandle>();
  private readonly warmAgeTimers = new Map<string, TimerHandle>();
  /** Seconds without input before a session ends, per session (the project's afkTimeout at join). */
  private readonly afkSeconds = new Map<string, number>();
  /** Control-plane time of the latest viewer input seen, and the agent's last reported value. */
  private readonly lastInput = new Map<string, { atMs: number; reported: number | undefined }>();

  constructor(
    private readonly clock: Clock,
    private readonly expiry: SessionTimerExpiry,
    /** How long an unreachable worker's sessions are kept (`workers.lostGraceSeconds`). */
    private readonly lostGraceMs = WORKER_LOST_GRACE_MS,
  ) {}

  /** At join: the project's AFK timeout applies to this session once it runs (0: none). */
  setAfkTimeout(sessionId: string, seconds: number): void {
    if (seconds > 0) this.afkSeconds.set(sessionId, seconds);
  }

  /**
   * The session was placed (Starting) `elapsedMs` ago (0: now; more when a restart arms it again
   * from the stored placement): its run time counts from the placement, and its viewer has
   * connectTimeoutMs from it to connect (0: no limit).
   */
  placed(sessionId: string, maxRunTimeMinutes: number | undefined, connectTimeoutMs: number, elapsedMs = 0): void {
    if (maxRunTimeMinutes !== undefined && maxRunTimeMinutes > 0) {
      this.arm(this.runTimers, sessionId, Math.max(0, maxRunTimeMinutes * 60_000 - elapsedMs), () => this.expiry.sessionExpired(sessionId, 'maxRunTime'));
    }
    if (connectTimeoutMs > 0) this.arm(this.connectTimers, sessionId, Math.max(0, connectTimeoutMs - elapsedMs), () => this.expiry.sessionExpired(sessionId, 'connectTimeout'));
  }

  /**
   * A warm instance was launched `elapsedMs` ago (more after a restart): unclaimed past maxAgeMs it
   * is replaced by a fresh one. Its run time, connect and idle timers start only when a viewer claims it.
   */
  warmInstancePlaced(sessionId: string, maxAgeMs: number, elapsedMs = 0): void {
    this.arm(this.warmAgeTimers, sessionId, Math.max(0, maxAgeMs - elapsedMs), () => this.expiry.sessionExpired(sessionId, 'warmInstanceAged'));
  }

  /** The viewer's peer connection is up (Running): the connect timeout is over; idle time starts counting. */
  startRunning(sessionId: string): void {
    this.cancel(this.connectTimers, sessionId);
    this.startAfkTimer(sessionId);
  }

  /** The worker says the viewer's media legs dropped: the session ends unless they are back within graceMs. */
  viewerDisconnected(sessionId: string, graceMs: number): void {
    if (this.streamLostTimers.has(sessionId)) return;
    this.arm(this.streamLostTimers, sessionId, graceMs, () => this.expiry.sessionExpired(sessionId, 'streamLost'));
  }

  /** The viewer renegotiated: its media legs are up again. */
  viewerReconnected(sessionId: string): void {
    this.cancel(this.streamLostTimers, sessionId);
  }

  /** The session is Terminating: its worker has `afterMs` to confirm the stop. */
  stopping(sessionId: string, afterMs: number): void {
    this.arm(this.stopTimers, sessionId, afterMs, () => this.expiry.stopUnconfirmed(sessionId));
  }

  /** True when the session's input is watched (Running, with an AFK timeout) and this last-input value is not the one last reported. */
  isNewInput(sessionId: string, lastInputAtMs: number): boolean {
    const seen = this.lastInput.get(sessionId);
    return seen !== undefined && lastInputAtMs !== seen.reported;
  }

  /** The worker reported the session's last-input value; a changed value means input arrived since. */
  inputReported(sessionId: string, lastInputAtMs: number): void {
    if (!this.isNewInput(sessionId, lastInputAtMs)) return;
    this.lastInput.set(sessionId, { atMs: this.clock.now(), reported: lastInputAtMs });
  }

  /** The session is ending (or over): its timers stop, the stop deadline included. */
  clear(sessionId: string): void {
    for (const timers of [this.runTimers, this.connectTimers, this.streamLostTimers, this.stopTimers, this.afkTimers, this.warmAgeTimers]) this.cancel(timers, sessionId);
    this.lastInput.delete(sessionId);
    this.afkSeconds.delete(sessionId);
  }

  /**
   * The worker's link is unreachable: its sessions are lost unless it comes back within
   * `remainingMs` (the whole grace when it just became so; what is left of it at a restart).
   */
  workerUnreachable(workerId: string, remainingMs = this.lostGraceMs): void {
    if (this.lostTimers.has(workerId)) return;
    this.arm(this.lostTimers, workerId, Math.max(0, remainingMs), () => this.expiry.workerLost(workerId));
  }

  workerConnected(workerId: string): void {
    this.lostTimers.get(workerId)?.cancel();
    this.lostTimers.delete(workerId);
  }

  /** Stops every timer. Idempotent. */
  close(): void {
    for (const timers of [this.runTimers, this.connectTimers, this.streamLostTimers, this.stopTimers, this.afkTimers, this.lostTimers, this.warmAgeTimers]) {
      for (const t of timers.values()) t.cancel();
      timers.clear();
    }
  }

  private arm(timers: Map<string, TimerHandle>, key: string, ms: number, fire: () => void): void {
    this.cancel(timers, key);
    timers.set(
      key,
      this.clock.setTimeout(() => {
        timers.delete(key);
        fire();
      }, ms),
    );
  }

  private cancel(timers: Map<string, TimerHandle>, key: string): void {
    timers.get(key)?.cancel();
    timers.delete(key);
  }

  /** Ends the session once its viewer has sent no input for the project's afkTimeout. */
  private startAfkTimer(sessionId: string): void {
    const seconds = this.afkSeconds.get(sessionId);
    if (seconds === undefined) return;
    this.lastInput.set(sessionId, { atMs: this.clock.now(), reported: undefined });
    const check = (): void => {
      const idleMs = this.clock.now() - (this.lastInput.get(sessionId)?.atMs ?? 0);
      if (idleMs >= seconds * 1000) {
        this.afkTimers.delete(sessionId);
        this.expiry.sessionExpired(sessionId, 'afkTimeout');
      } else {
        this.afkTimers.set(sessionId, this.clock.setTimeout(check, seconds * 1000 - idleMs));
      }
    };
    this.afkTimers.set(sessionId, this.clock.setTimeout(check, seconds * 1000));
  }
}
