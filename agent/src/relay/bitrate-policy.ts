// Which bitrate the relay tells the app (REMB), as a table of phases. With one viewer per session,
// the app should send what the viewer's path carries, end to end. What the relay hears from a
// browser is REMB (transport-cc is not negotiated: werift's feedback stalls libwebrtc, werift-notes
// §5.7), the browser's receive-side estimate, which is delay-based only and reads bursty delivery
// as congestion: measured on loopback with zero packets lost, following it pinned a 720p app at the
// floor (issue 9). So the estimate steers the app when the viewer's leg really loses packets, and
// otherwise the app runs free up to the project's max on its own estimator (libwebrtc's loss-based
// one: +8 %/s while clean), which is how a libwebrtc sender without transport-cc behaves anyway.
// Two moments hold the project's start bitrate instead: before the viewer has said anything, and
// while the viewer recovers from a loss the relay itself caused (a packet this host dropped, a NACK
// it could not answer) — the viewer's estimate is no guide there, and max would pile a bigger
// stream onto the recovery, min would pin the app for a loss no lower bitrate can cure.

/** A viewer's REMB counts for this long after it arrived, in ms. */
export const VIEWER_ESTIMATE_TTL_MS = 5_000;

/** How long after the relay's last own loss the viewer is treated as recovering, ms. */
export const RELAY_LOSS_HOLD_MS = 3_000;

/** Share of forwarded packets a viewer NACKs within one REMB period that counts as its leg losing. */
export const VIEWER_LOSS_THRESHOLD = 0.02;
/** How long the viewer's estimate keeps steering after its leg last lost packets, ms. */
export const VIEWER_LOSS_HOLD_MS = 10_000;

export type BitratePhase = 'awaiting-estimate' | 'viewer-clean' | 'viewer-losing' | 'recovering-relay-loss';

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

/** Per phase: the bitrate sent to the app, from the lowest fresh viewer estimate (undefined: none). */
export const BITRATE_BY_PHASE: Readonly<Record<BitratePhase, (lowest: number | undefined, b: BitrateSettings) => number>> = {
  'awaiting-estimate': (_lowest, b) => b.startBps,
  'viewer-clean': (_lowest, b) => b.maxBps,
  'viewer-losing': (lowest, b) => clamp(lowest ?? b.startBps, b),
  'recovering-relay-loss': (lowest, b) => clamp(Math.max(lowest ?? 0, b.startBps), b),
};

export class BitratePolicy {
  private lastRelayLossMs = -Infinity;
  private lastViewerLossMs = -Infinity;

  constructor(private readonly settings: BitrateSettings) {}

  /** The relay lost packets of its own (ingest gaps, a viewer NACK it could not answer). */
  relayLoss(nowMs: number): void {
    this.lastRelayLossMs = nowMs;
  }

  /** A viewer's leg lost more than VIEWER_LOSS_THRESHOLD of its packets in a window (viewerLegLosing). */
  viewerLoss(nowMs: number): void {
    this.lastViewerLossMs = nowMs;
  }

  /** Phases in precedence order: the relay's own loss first (the viewer's loss then is ours too). */
  phase(estimates: Iterable<ViewerEstimate>, nowMs: number): BitratePhase {
    if (nowMs - this.lastRelayLossMs < RELAY_LOSS_HOLD_MS) return 'recovering-relay-loss';
    if (nowMs - this.lastViewerLossMs < VIEWER_LOSS_HOLD_MS) return 'viewer-losing';
    return lowestFresh(estimates, nowMs) === undefined ? 'awaiting-estimate' : 'viewer-clean';
  }

  /** The bitrate for the app now, bits per second. */
  targetBps(estimates: Iterable<ViewerEstimate>, nowMs: number): number {
    const all = [...estimates];
    return Math.floor(BITRATE_BY_PHASE[this.phase(all, nowMs)](lowestFresh(all, nowMs), this.settings));
  }
}

/**
 * Whether a viewer's leg lost packets over one window: the share of packets forwarded to it in the
 * window that it NACKed (counts are totals; the window is the span between two calls).
 */
export function viewerLegLosing(before: { forwarded: number; nacked: number }, now: { forwarded: number; nacked: number }): boolean {
  const forwarded = now.forwarded - before.forwarded;
  return forwarded > 0 && (now.nacked - before.nacked) / forwarded > VIEWER_LOSS_THRESHOLD;
}

function lowestFresh(estimates: Iterable<ViewerEstimate>, nowMs: number): number | undefined {
  let lowest: number | undefined;
  for (const e of estimates) if (nowMs - e.atMs <= VIEWER_ESTIMATE_TTL_MS && (lowest === undefined || e.bps < lowest)) lowest = e.bps;
  return lowest;
}

function clamp(bps: number, b: BitrateSettings): number {
  return Math.min(b.maxBps, Math.max(b.minBps, bps));
}
