import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { TelemetryReporter, type TelemetryTransport } from './reporter';
import type { ClientDetails, TelemetryRequestBody, TelemetryStatsRow } from './rows';

const DETAILS: ClientDetails = { browser: 'Chrome 147', os: 'Linux', deviceType: 'desktop', embedded: false, domainUrl: 'https://play.example/share/p1' };

function statsRowAt(n: number): TelemetryStatsRow {
  return {
    timestamp: new Date(n * 1000).toISOString(),
    FPS: '60',
    framesDecoded: String(n),
    bitrate: '1000',
    latency: '20',
    packetLoss: '0',
    framesDropped: '0',
    videoCodec: 'H264',
    videoResolution: '1280x720',
  };
}

class FakeTransport implements TelemetryTransport {
  readonly posts: { url: string; body: TelemetryRequestBody; token: string }[] = [];
  readonly beacons: { url: string; body: TelemetryRequestBody }[] = [];
  statuses: number[] = [];
  beaconAccepts = true;

  post(url: string, body: string, token: string): Promise<number> {
    this.posts.push({ url, body: JSON.parse(body) as TelemetryRequestBody, token });
    return Promise.resolve(this.statuses.shift() ?? 204);
  }

  beacon(url: string, body: string): boolean {
    this.beacons.push({ url, body: JSON.parse(body) as TelemetryRequestBody });
    return this.beaconAccepts;
  }
}

function reporter(transport: FakeTransport, extra: { maxBufferedRows?: number } = {}): TelemetryReporter {
  return new TelemetryReporter({
    url: 'https://play.example/api/telemetry',
    sessionId: 'session_1_2',
    viewerToken: 'viewer-token',
    clientDetails: DETAILS,
    transport,
    flushIntervalMs: 10_000,
    maxBackoffMs: 60_000,
    ...extra,
  });
}

describe('TelemetryReporter', () => {
  beforeEach(() => {
    vi.useFakeTimers({ now: new Date('2026-06-01T12:00:00.000Z') });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('posts event rows shaped as the spec says, with the token in header and body, on the interval', async () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    telemetry.start();
    telemetry.recordEvent('sdpOffer');
    telemetry.recordEvent('disconnected', { code: 4001, reasonName: 'noServerAvailable' });
    await vi.advanceTimersByTimeAsync(9_999);
    expect(transport.posts).toHaveLength(0);
    await vi.advanceTimersByTimeAsync(1);
    expect(transport.posts).toHaveLength(1);
    const [post] = transport.posts;
    expect(post?.url).toBe('https://play.example/api/telemetry');
    expect(post?.token).toBe('viewer-token');
    expect(post?.body.sessionId).toBe('session_1_2');
    expect(post?.body.viewerToken).toBe('viewer-token');
    expect(post?.body.rows).toEqual([
      { sessionId: 'session_1_2', logType: 'Webrtc', event: 'sdpOffer', timestamp: '2026-06-01T12:00:00.000Z', ...DETAILS },
      {
        sessionId: 'session_1_2',
        logType: 'Webrtc',
        event: 'disconnected',
        timestamp: '2026-06-01T12:00:00.000Z',
        code: 4001,
        reasonName: 'noServerAvailable',
        ...DETAILS,
      },
    ]);
    telemetry.close();
  });

  it('carries client details on event rows only until one of them is delivered', async () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    transport.statuses = [503];
    telemetry.recordEvent('sdpOffer');
    telemetry.recordStats(statsRowAt(1));
    await telemetry.flush(); // fails: details not delivered yet
    telemetry.recordEvent('sdpAnswer');
    await vi.advanceTimersByTimeAsync(10_000);
    await telemetry.flush();
    telemetry.recordEvent('connected', { iceConnectionState: 'connected' });
    await vi.advanceTimersByTimeAsync(10_000);
    await telemetry.flush();

    const delivered = transport.posts.slice(1).flatMap((post) => post.body.rows);
    expect(delivered.map((row) => ('event' in row ? row.event : 'stats'))).toEqual(['sdpOffer', 'stats', 'sdpAnswer', 'connected']);
    expect(delivered[0]).toMatchObject(DETAILS);
    expect(delivered[1]).not.toHaveProperty('browser');
    expect(delivered[2]).toMatchObject(DETAILS);
    expect(delivered[3]).not.toHaveProperty('browser');
    expect(delivered[3]).toMatchObject({ iceConnectionState: 'connected' });
  });

  it('sends at most 50 rows per request and keeps going until the buffer is empty', async () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    for (let n = 0; n < 120; n += 1) telemetry.recordStats(statsRowAt(n));
    await telemetry.flush();
    await vi.runOnlyPendingTimersAsync();
    await vi.runOnlyPendingTimersAsync();
    expect(transport.posts.map((post) => post.body.rows.length)).toEqual([50, 50, 20]);
    expect(telemetry.pending).toBe(0);
  });

  it('keeps rows through failures, backs off exponentially, and delivers them in order later', async () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    transport.statuses = [0, 503];
    telemetry.recordStats(statsRowAt(1));
    await telemetry.flush(); // network error → next try in 10 s
    await telemetry.flush();
    expect(transport.posts).toHaveLength(1);
    await vi.advanceTimersByTimeAsync(10_000);
    telemetry.recordStats(statsRowAt(2));
    await telemetry.flush(); // 503 → next try in 20 s
    await vi.advanceTimersByTimeAsync(19_999);
    await telemetry.flush();
    expect(transport.posts).toHaveLength(2);
    await vi.advanceTimersByTimeAsync(1);
    await telemetry.flush();
    expect(transport.posts).toHaveLength(3);
    expect(transport.posts[2]?.body.rows.map((row) => ('framesDecoded' in row ? row.framesDecoded : ''))).toEqual(['1', '2']);
  });

  it('drops the oldest rows when the endpoint keeps failing', async () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport, { maxBufferedRows: 5 });
    transport.statuses = [503];
    for (let n = 0; n < 4; n += 1) telemetry.recordStats(statsRowAt(n));
    await telemetry.flush();
    for (let n = 4; n < 8; n += 1) telemetry.recordStats(statsRowAt(n));
    expect(telemetry.pending).toBe(5);
    expect(telemetry.dropped).toBe(3);
    await vi.advanceTimersByTimeAsync(10_000);
    await telemetry.flush();
    expect(transport.posts[1]?.body.rows.map((row) => ('framesDecoded' in row ? row.framesDecoded : ''))).toEqual(['3', '4', '5', '6', '7']);
  });

  it('gives up for good when the token is refused', async () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    transport.statuses = [401];
    telemetry.start();
    telemetry.recordEvent('sdpOffer');
    await telemetry.flush();
    telemetry.recordEvent('sdpAnswer');
    await vi.advanceTimersByTimeAsync(120_000);
    telemetry.flushWithBeacon();
    expect(transport.posts).toHaveLength(1);
    expect(transport.beacons).toHaveLength(0);
    expect(telemetry.pending).toBe(0);
  });

  it('drops a batch the server rejects as malformed and carries on', async () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    transport.statuses = [400];
    telemetry.recordEvent('sdpOffer');
    await telemetry.flush();
    telemetry.recordEvent('sdpAnswer');
    await telemetry.flush();
    expect(transport.posts.map((post) => post.body.rows.map((row) => ('event' in row ? row.event : '')))).toEqual([['sdpOffer'], ['sdpAnswer']]);
  });

  it('hands everything to sendBeacon when the page goes away, falling back to fetch when refused', () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    for (let n = 0; n < 60; n += 1) telemetry.recordStats(statsRowAt(n));
    transport.beaconAccepts = false;
    telemetry.recordEvent('visibilitychange', { visibility: 'hidden' });
    telemetry.flushWithBeacon();
    expect(transport.beacons.map((beacon) => beacon.body.rows.length)).toEqual([50, 11]);
    expect(transport.beacons[0]?.body.viewerToken).toBe('viewer-token');
    expect(transport.posts).toHaveLength(2); // both refused beacons went by fetch keepalive
    expect(telemetry.pending).toBe(0);
  });

  it('close() beacons what is left and is idempotent', () => {
    const transport = new FakeTransport();
    const telemetry = reporter(transport);
    telemetry.start();
    telemetry.recordEvent('disconnected', { code: 1000, reasonName: 'normalClosure' });
    telemetry.close();
    telemetry.close();
    telemetry.recordEvent('sdpOffer');
    expect(transport.beacons).toHaveLength(1);
    expect(telemetry.pending).toBe(0);
  });
});
