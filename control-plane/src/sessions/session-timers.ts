// The lifecycle's timers, all on the injected clock: a Running session's maximum run time, its
// idle (AFK) timeout measured from the viewer input its worker reports, and the grace an
// unreachable worker's sessions get before they are declared lost. The timers decide when; the
// lifecycle, told through SessionTimerExpiry, decides what ending means.
import type { Clock, TimerHandle } from '@pixelfleet/signaling';

/** How long an agent gets to stop an app gracefully before it kills the process tree (sent with every StopSession). */
export const STOP_GRACE_MS = 10_000;
/** How long sessions of an unreachable worker are kept (media can outlive a control-link blip). */
export const WORKER_LOST_GRACE_MS = 120_000;

export interface SessionTimerExpiry {
  /** The session reached its maximum run time, or its viewer sent no input for the AFK timeout. */
  sessionExpired(sessionId: string, cause: 'maxRunTime' | 'afkTimeout'): void;
  /** The worker stayed unreachable for WORKER_LOST_GRACE_MS. */
  workerLost(workerId: string): void;
}

export class SessionTimers {
  private readonly runTimers = new Map<string, TimerHandle>();
  private readonly afkTimers = new Map<string, TimerHandle>();
  private readonly lostTimers = new Map<string, TimerHandle>();
  /** Seconds without input before a session ends, per session (the project's afkTimeout at join). */
  private readonly afkSeconds = new Map<string, number>();
  /** Control-plane time of the latest viewer input seen, and the agent's last reported value. */
  private readonly lastInput = new Map<string, { atMs: number; reported: number | undefined }>();

  constructor(
    private readonly clock: Clock,
    private readonly expiry: SessionTimerExpiry,
  ) {}

  /** At join: the project's AFK timeout applies to this session once it runs (0: none). */
  setAfkTimeout(sessionId: string, seconds: number): void {
    if (seconds > 0) this.afkSeconds.set(sessionId, seconds);
  }

  /** The session is Running: its run time and idle time start counting. */
  startRunning(sessionId: string, maxRunTimeMinutes: number | undefined): void {
    if (maxRunTimeMinutes !== undefined && maxRunTimeMinutes > 0) {
      this.runTimers.set(
        sessionId,
        this.clock.setTimeout(() => {
          this.runTimers.delete(sessionId);
          this.expiry.sessionExpired(sessionId, 'maxRunTime');
        }, maxRunTimeMinutes * 60_000),
      );
    }
    this.startAfkTimer(sessionId);
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

  /** The session is ending: its timers stop. */
  clear(sessionId: string): void {
    this.runTimers.get(sessionId)?.cancel();
    this.runTimers.delete(sessionId);
    this.afkTimers.get(sessionId)?.cancel();
    this.afkTimers.delete(sessionId);
    this.lastInput.delete(sessionId);
    this.afkSeconds.delete(sessionId);
  }

  /** The worker's link became unreachable: its sessions are lost unless it comes back within the grace. */
  workerUnreachable(workerId: string): void {
    if (this.lostTimers.has(workerId)) return;
    this.lostTimers.set(
      workerId,
      this.clock.setTimeout(() => {
        this.lostTimers.delete(workerId);
        this.expiry.workerLost(workerId);
      }, WORKER_LOST_GRACE_MS),
    );
  }

  workerConnected(workerId: string): void {
    this.lostTimers.get(workerId)?.cancel();
    this.lostTimers.delete(workerId);
  }

  /** Stops every timer. Idempotent. */
  close(): void {
    for (const timers of [this.runTimers, this.afkTimers, this.lostTimers]) {
      for (const t of timers.values()) t.cancel();
      timers.clear();
    }
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
