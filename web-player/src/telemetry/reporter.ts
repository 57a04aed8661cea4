// Collects a session's telemetry rows and delivers them in batches: periodic and on important
// events by POST (fetch keepalive), everything left by sendBeacon when the page goes away.
// The transport and clock are injected so the batching rules are tested without a browser.

import { RowBuffer } from './row-buffer';
import {
  MAX_ROWS_PER_REQUEST,
  type ClientDetails,
  type TelemetryEventName,
  type TelemetryEventRow,
  type TelemetryRequestBody,
  type TelemetryRow,
  type TelemetryStatsRow,
} from './rows';

/** How rows leave the page. */
export interface TelemetryTransport {
  /** POST the JSON body with the token header; resolves to the HTTP status, or 0 on a network error. */
  post(url: string, body: string, viewerToken: string): Promise<number>;
  /** Queue the body with sendBeacon; false when the browser refused it. */
  beacon(url: string, body: string): boolean;
}

export interface TelemetryReporterOptions {
  readonly url: string;
  readonly sessionId: string;
  readonly viewerToken: string;
  readonly clientDetails: ClientDetails;
  readonly transport: TelemetryTransport;
  /** Clock; default `() => new Date()`. */
  readonly now?: () => Date;
  /** Regular delivery interval in ms; default 10 000. */
  readonly flushIntervalMs?: number;
  /** Most rows held while the endpoint is failing (oldest dropped first); default 300. */
  readonly maxBufferedRows?: number;
  /** Longest wait between retries after failures, in ms; default 60 000. */
  readonly maxBackoffMs?: number;
}

/** Extra fields of an event row (see the spec: present on the events they describe). */
export type EventDetails = Pick<TelemetryEventRow, 'iceConnectionState' | 'reasonName' | 'code' | 'visibility' | 'tcpFallback'>;

type BufferedRow = { readonly row: TelemetryRow; readonly hasClientDetails: boolean };

/** Statuses after which this session's telemetry is abandoned (token refused, session unknown). */
const FATAL_STATUSES = new Set([401, 403, 404, 410]);

export class TelemetryReporter {
  private readonly buffer: RowBuffer<BufferedRow>;
  private readonly now: () => Date;
  private readonly flushIntervalMs: number;
  private readonly maxBackoffMs: number;
  private timer: ReturnType<typeof setInterval> | undefined;
  private soon: ReturnType<typeof setTimeout> | undefined;
  private inFlight = false;
  private failures = 0;
  private nextAttemptAt = 0;
  private clientDetailsDelivered = false;
  private stopped = false;

  constructor(private readonly options: TelemetryReporterOptions) {
    this.buffer = new RowBuffer(options.maxBufferedRows ?? 300);
    this.now = options.now ?? (() => new Date());
    this.flushIntervalMs = options.flushIntervalMs ?? 10_000;
    this.maxBackoffMs = options.maxBackoffMs ?? 60_000;
  }

  /** Start the regular delivery timer. */
  start(): void {
    if (this.timer !== undefined || this.stopped) return;
    this.timer = setInterval(() => void this.flush(), this.flushIntervalMs);
  }

  /** Rows waiting for delivery. */
  get pending(): number {
    return this.buffer.size;
  }

  /** Rows dropped because the buffer was full. */
  get dropped(): number {
    return this.buffer.dropped;
  }

  /** Record an event row; client details ride on event rows until one such row has been delivered. */
  recordEvent(event: TelemetryEventName, details: EventDetails = {}): void {
    if (this.stopped) return;
    const withDetails = !this.clientDetailsDelivered;
    const row: TelemetryEventRow = {
      sessionId: this.options.sessionId,
      logType: 'Webrtc',
      event,
      timestamp: this.now().toISOString(),
      ...details,
      ...(withDetails ? this.options.clientDetails : {}),
    };
    this.buffer.push({ row, hasClientDetails: withDetails });
  }

  recordStats(row: TelemetryStatsRow): void {
    if (this.stopped) return;
    this.buffer.push({ row, hasClientDetails: false });
  }

  /** Deliver soon (next task) unless the endpoint is in back-off. */
  flushSoon(): void {
    if (this.soon !== undefined || this.stopped) return;
    this.soon = setTimeout(() => {
      this.soon = undefined;
      void this.flush();
    }, 0);
  }

  /** POST one batch if any rows wait and no request is in flight. Never rejects. */
  async flush(): Promise<void> {
    if (this.stopped || this.inFlight || this.buffer.size === 0) return;
    if (this.now().getTime() < this.nextAttemptAt) return;
    const batch = this.buffer.take(MAX_ROWS_PER_REQUEST);
    this.inFlight = true;
    let status = 0;
    try {
      status = await this.options.transport.post(this.options.url, this.body(batch), this.options.viewerToken);
    } catch {
      status = 0;
    } finally {
      this.inFlight = false;
    }
    this.settle(batch, status);
    if (status >= 200 && status < 300 && this.buffer.size > 0) this.flushSoon();
  }

  /** Page is going away: hand every waiting row to sendBeacon (fetch keepalive if refused). */
  flushWithBeacon(): void {
    if (this.stopped) return;
    while (this.buffer.size > 0) {
      const batch = this.buffer.take(MAX_ROWS_PER_REQUEST);
      const body = this.body(batch);
      if (!this.options.transport.beacon(this.options.url, body)) {
        void this.options.transport.post(this.options.url, body, this.options.viewerToken).catch(() => 0);
      }
    }
  }

  /** Stop timers; rows still waiting go out by beacon. Idempotent. */
  close(): void {
    if (this.stopped) return;
    this.flushWithBeacon();
    this.stop();
  }

  private stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearInterval(this.timer);
    if (this.soon !== undefined) clearTimeout(this.soon);
    this.timer = undefined;
    this.soon = undefined;
    this.buffer.clear();
  }

  private body(batch: readonly BufferedRow[]): string {
    const body: TelemetryRequestBody = {
      sessionId: this.options.sessionId,
      viewerToken: this.options.viewerToken,
      rows: batch.map((entry) => entry.row),
    };
    return JSON.stringify(body);
  }

  private settle(batch: readonly BufferedRow[], status: number): void {
    if (status >= 200 && status < 300) {
      this.failures = 0;
      this.nextAttemptAt = 0;
      if (batch.some((entry) => entry.hasClientDetails)) this.clientDetailsDelivered = true;
      return;
    }
    if (FATAL_STATUSES.has(status)) {
      this.stop();
      return;
    }
    if (status >= 400 && status < 500 && status !== 408 && status !== 429) {
      return; // the server will never take this batch: drop it, keep the rest flowing
    }
    // Network error, 408, 429 or 5xx: keep the rows (the buffer bound drops the oldest) and back off.
    this.buffer.requeue(batch);
    this.failures += 1;
    const delay = Math.min(this.maxBackoffMs, this.flushIntervalMs * 2 ** (this.failures - 1));
    this.nextAttemptAt = this.now().getTime() + delay;
  }
}
