// Which bitrate the relay tells the app (REMB): a small loss-based controller, one step per REMB
// period, its phases a table. With one viewer per session the app should send what the viewer's
// path carries, end to end. What the relay hears from a browser is REMB (transport-cc is not
// negotiated: werift's feedback stalls libwebrtc, werift-notes §5.7), the browser's receive-side
// estimate: delay-based only, capped at 1.5× what it receives, first sent ~5 s after media starts,
// and it reads bursty delivery as congestion — measured on loopback with zero packets lost,
// following it pinned a 720p app at the 1 Mbps floor (issue 9). So the relay steers by what it
// knows for sure: how much it forwarded to the viewer and how much of it the viewer NACKed.
//  - The viewer's leg is clean: step up by half of what was forwarded (what a receiver-side
//    estimator allows at most), never below the project's start bitrate, up to its max.
//  - The viewer's leg loses packets (NACKs over 2 % of a period's packets): step down to 85 % of
//    what was forwarded, and to the viewer's own estimate when that is lower (then it is right).
//  - After a loss, hold for a while before stepping up again (no sawtooth every second).
//  - The relay itself lost packets (this host dropped them; the app is local): never read as
//    congestion; the app keeps at least the start bitrate while the viewer recovers.

/** A viewer's REMB counts for this long after it arrived, in ms. */
export const VIEWER_ESTIMATE_TTL_MS = 5_000;
/** How long after the relay's last own loss the viewer is treated as recovering from it, ms. */
export const RELAY_LOSS_HOLD_MS = 3_000;
/** Share of a period's forwarded packets a viewer NACKs that counts as its leg losing. */
export const VIEWER_LOSS_THRESHOLD = 0.02;
/** How long the target holds after the viewer's leg last lost packets, ms. */
export const VIEWER_LOSS_HOLD_MS = 10_000;
/** Step up per clean period, as a multiple of the bitrate forwarded in it. */
export const CLEAN_STEP_UP = 1.5;
/** Step down per losing period, as a multiple of the bitrate forwarded in it. */
export const LOSS_STEP_DOWN = 0.85;

export type BitratePhase = 'recovering-relay-loss' | 'viewer-losing' | 'viewer-recovering' | 'viewer-clean';

export interface BitrateSettings {
  startBps: number;
  minBps: number;
  maxBps: number;
}

export interface ViewerEstimate {
  bps: number;
  /** Clock time it arrived, ms. */
  atMs: number;
}

/** What one REMB period saw. */
export interface BitratePeriod {
  nowMs: number;
  /** Video forwarded to the viewer(s) in the period, bits per second (the least of them). */
  forwardedBps: number;
  /** A viewer NACKed more than VIEWER_LOSS_THRESHOLD of the packets forwarded to it in the period. */
  viewerLost: boolean;
  /** The lowest viewer REMB of the last VIEWER_ESTIMATE_TTL_MS, if any. */
  lowestEstimateBps: number | undefined;
}

/** Per phase: the next target from the current one and the period. */
export const NEXT_TARGET_BY_PHASE: Readonly<Record<BitratePhase, (targetBps: number, p: BitratePeriod, b: BitrateSettings) => number>> = {
  'recovering-relay-loss': (target, _p, b) => Math.max(target, b.startBps),
  'viewer-losing': (target, p, b) => Math.max(b.minBps, Math.min(target, LOSS_STEP_DOWN * p.forwardedBps, p.lowestEstimateBps ?? Infinity)),
  'viewer-recovering': (target) => target,
  'viewer-clean': (target, p, b) => Math.min(b.maxBps, Math.max(target, b.startBps, CLEAN_STEP_UP * p.forwardedBps)),
};

export class BitratePolicy {
  private target: number;
  private current: BitratePhase = 'viewer-clean';
  private lastRelayLossMs = -Infinity;
  private lastViewerLossMs = -Infinity;

  constructor(private readonly settings: BitrateSettings) {
    this.target = settings.startBps;
  }

  /** The relay lost packets of its own (ingest gaps, a viewer NACK it could not answer). */
  relayLoss(nowMs: number): void {
    this.lastRelayLossMs = nowMs;
  }

  /** One REMB period ended: moves the target; returns it (bits per second, within [min, max]). */
  step(period: BitratePeriod): number {
    this.current = this.phaseFor(period);
    if (this.current === 'viewer-losing') this.lastViewerLossMs = period.nowMs;
    const next = NEXT_TARGET_BY_PHASE[this.current](this.target, period, this.settings);
    this.target = Math.floor(Math.min(this.settings.maxBps, Math.max(this.settings.minBps, next)));
    return this.target;
  }

  /** The phase of the last period. */
  get phase(): BitratePhase {
    return this.current;
  }

  get targetBps(): number {
    return this.target;
  }

  /** Phases in precedence order: the relay's own loss first (the viewer's loss then is ours too). */
  private phaseFor(p: BitratePeriod): BitratePhase {
    if (p.nowMs - this.lastRelayLossMs < RELAY_LOSS_HOLD_MS) return 'recovering-relay-loss';
    if (p.viewerLost) return 'viewer-losing';
    if (p.nowMs - this.lastViewerLossMs < VIEWER_LOSS_HOLD_MS) return 'viewer-recovering';
    return 'viewer-clean';
  }
}

/** The lowest viewer estimate still fresh at nowMs. */
export function lowestFreshEstimate(estimates: Iterable<ViewerEstimate>, nowMs: number): number | undefined {
  let lowest: number | undefined;
  for (const e of estimates) if (nowMs - e.atMs <= VIEWER_ESTIMATE_TTL_MS && (lowest === undefined || e.bps < lowest)) lowest = e.bps;
  return lowest;
}

/**
 * Whether a viewer's leg lost packets over one period: the share of packets forwarded to it in the
 * period that it NACKed (counts are totals; the period is the span between two calls).
 */
export function viewerLegLosing(before: { forwarded: number; nacked: number }, now: { forwarded: number; nacked: number }): boolean {
  const forwarded = now.forwarded - before.forwarded;
  return forwarded > 0 && (now.nacked - before.nacked) / forwarded > VIEWER_LOSS_THRESHOLD;
}
