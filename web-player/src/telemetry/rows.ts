// Telemetry rows exactly as the spec's "Telemetry row" section names them, the request that carries
// them to the control plane, and the shaping of the frontend library's aggregated stats into a row.

/** Header that carries the per-session viewer token (sendBeacon cannot set it: the body has it too). */
export const VIEWER_TOKEN_HEADER = 'x-viewer-token';

/** At most this many rows per request (keeps a keepalive fetch or beacon well under 64 KB). */
export const MAX_ROWS_PER_REQUEST = 50;

/** Event names the page reports (the spec's list is open-ended; the first six are the spec's). */
export type TelemetryEventName =
  | 'sdpOffer'
  | 'sdpAnswer'
  | 'connected'
  | 'videoInitialized'
  | 'disconnected'
  | 'visibilitychange'
  | 'iceConnectionStateChange'
  | 'tcpFallback'
  | 'playStreamRejected';

/** Client details, sent on the first event rows of a session (`geoData` is the server's to add, from the client address: docs/streaming.md). */
export interface ClientDetails {
  readonly browser: string;
  readonly os: string;
  readonly deviceType: 'desktop' | 'mobile' | 'tablet';
  readonly embedded: boolean;
  /** Address of the page the viewer sees: the host page's when embedded, else this page's. */
  readonly domainUrl: string;
}

/** Event row (`logType: 'Webrtc'`). */
export interface TelemetryEventRow extends Partial<ClientDetails> {
  readonly sessionId: string;
  readonly logType: 'Webrtc';
  readonly event: TelemetryEventName;
  /** ISO 8601. */
  readonly timestamp: string;
  readonly iceConnectionState?: string;
  readonly reasonName?: string;
  /** WebSocket close code, on `disconnected`. */
  readonly code?: number;
  /** `visible` | `hidden`, on `visibilitychange`. */
  readonly visibility?: string;
  readonly tcpFallback?: boolean;
}

/** Statistics row: no `logType`, every value a string. */
export interface TelemetryStatsRow {
  /** ISO 8601. */
  readonly timestamp: string;
  /** Frames per second decoded. */
  readonly FPS: string;
  /** Cumulative decoded frames. */
  readonly framesDecoded: string;
  /** Receive bitrate in kbit/s, as the frontend library computes it. */
  readonly bitrate: string;
  /** Round-trip time in milliseconds ('' until measured). */
  readonly latency: string;
  /** Cumulative lost packets (RTP `packetsLost`). */
  readonly packetLoss: string;
  /** Cumulative dropped frames. */
  readonly framesDropped: string;
  /** e.g. `H264` ('' until negotiated). */
  readonly videoCodec: string;
  /** e.g. `1920x1080` ('' until known). */
  readonly videoResolution: string;
}

export type TelemetryRow = TelemetryEventRow | TelemetryStatsRow;

/** Body of `POST <telemetryUrl>` (JSON; sent as text/plain by sendBeacon across origins). */
export interface TelemetryRequestBody {
  readonly sessionId: string;
  readonly viewerToken: string;
  readonly rows: readonly TelemetryRow[];
}

/**
 * The part of the library's `AggregatedStats` the row needs. Structural, so the library's object
 * fits and tests can pass plain objects.
 */
export interface StatsSource {
  readonly inboundVideoStats: {
    readonly framesPerSecond?: number | undefined;
    readonly framesDecoded?: number | undefined;
    readonly bitrate?: number | undefined;
    readonly packetsLost?: number | undefined;
    readonly framesDropped?: number | undefined;
    readonly frameWidth?: number | undefined;
    readonly frameHeight?: number | undefined;
    readonly codecId?: string | undefined;
  };
  readonly codecs?: ReadonlyMap<string, { readonly mimeType?: string | undefined }> | undefined;
  readonly remoteOutboundVideoStats?:
    | { readonly totalRoundTripTime?: number | undefined; readonly roundTripTimeMeasurements?: number | undefined }
    | undefined;
  getActiveCandidatePair(): { readonly currentRoundTripTime?: number | undefined } | null;
}

function finite(value: number | undefined): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function counter(value: number | undefined): string {
  return finite(value) ? String(Math.max(0, Math.round(value))) : '0';
}

/** Round-trip time in ms: the selected candidate pair's, else the RTCP average (as the library does). */
function roundTripMs(stats: StatsSource): number | undefined {
  const pair = stats.getActiveCandidatePair();
  if (pair !== null && finite(pair.currentRoundTripTime)) return pair.currentRoundTripTime * 1000;
  const remote = stats.remoteOutboundVideoStats;
  if (remote !== undefined && finite(remote.totalRoundTripTime) && finite(remote.roundTripTimeMeasurements) && remote.roundTripTimeMeasurements > 0) {
    return (remote.totalRoundTripTime / remote.roundTripTimeMeasurements) * 1000;
  }
  return undefined;
}

function codecName(stats: StatsSource): string {
  const id = stats.inboundVideoStats.codecId;
  if (id === undefined) return '';
  const mime = stats.codecs?.get(id)?.mimeType ?? '';
  return mime.replace(/^video\//i, '');
}

/** Shape one statistics row from the library's aggregated stats, taken at `at`. */
export function statsRow(stats: StatsSource, at: Date): TelemetryStatsRow {
  const video = stats.inboundVideoStats;
  const rtt = roundTripMs(stats);
  const width = video.frameWidth;
  const height = video.frameHeight;
  return {
    timestamp: at.toISOString(),
    FPS: counter(video.framesPerSecond),
    framesDecoded: counter(video.framesDecoded),
    bitrate: counter(video.bitrate),
    latency: rtt === undefined ? '' : String(Math.round(rtt)),
    packetLoss: counter(video.packetsLost),
    framesDropped: counter(video.framesDropped),
    videoCodec: codecName(stats),
    videoResolution: finite(width) && finite(height) && width > 0 && height > 0 ? `${width}x${height}` : '',
  };
}
