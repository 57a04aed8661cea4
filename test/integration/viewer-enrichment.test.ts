// Enrichment on ingest with real parts: a viewer's signalling WebSocket through the share route
// (real HTTP upgrade, fastify's trustProxy), the bundled GeoIP database and User-Agent parser, the
// session row and its day's rollup, then the telemetry route putting the server's client details
// on the session's first rows over what the page claimed.
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteSessionDimensionsRepository } from '@pixelfleet/control-plane/test-support';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { startStreamingProject } from '../support/streaming-project';
import { FakePlayer } from '../support/fake-player';
import { sessionRecord, telemetryRows } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const CHROME_WINDOWS = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const SAFARI_IPHONE =
  'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

async function setup(trustProxy: string[]) {
  const t: TestControlPlane = await startTestControlPlane({ overrides: { http: { host: '127.0.0.1', port: 0, trustProxy } } });
  cleanups.push(() => t.destroy());
  const { projectId, wsUrl } = await startStreamingProject(t, cleanups, 'Enrich');
  /** A viewer socket; returns its session id and viewer token. */
  const view = async (headers: Record<string, string>) => {
    const p = await FakePlayer.connect(wsUrl, headers);
    cleanups.push(() => p.socket.terminate());
    const m = await p.next('pixelfleetSession');
    return { sessionId: m.sessionId as string, viewerToken: m.viewerToken as string };
  };
  const client = (sessionId: string) => sessionRecord(t.cp, sessionId)?.client;
  return { t, projectId, view, client };
}

describe('client dimensions of a new session', () => {
  it('come from the User-Agent and the address a trusted proxy names in X-Forwarded-For (IPv4 and IPv6)', async () => {
    const { t, projectId, view, client } = await setup(['127.0.0.1']);
    const uk = await view({ 'user-agent': CHROME_WINDOWS, 'x-forwarded-for': '81.2.69.142' });
    const de = await view({ 'user-agent': SAFARI_IPHONE, 'x-forwarded-for': '198.51.100.7, 2a00:1450:4001:80b::200e' });
    const bot = await view({ 'user-agent': 'Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)', 'x-forwarded-for': '10.20.30.40' });

    expect(client(uk.sessionId)).toEqual({ browser: 'Chrome', os: 'Windows', deviceType: 'desktop', country: 'United Kingdom', countryCode: 'GB', city: 'London' });
    // The right-most address not a trusted proxy is the client (the left one is the client's claim).
    expect(client(de.sessionId)).toEqual({ browser: 'Mobile Safari', os: 'iOS', deviceType: 'mobile', country: 'Germany', countryCode: 'DE', city: 'Frankfurt am Main' });
    // A bot User-Agent and a private address: nothing known.
    expect(sessionRecord(t.cp, bot.sessionId)).toBeDefined();
    expect(client(bot.sessionId)).toBeUndefined();

    // The day's rollup counted them in the session's transaction.
    const dims = new SqliteSessionDimensionsRepository(t.cp.db);
    const window = { projectId, from: Date.now() - 3_600_000, to: Date.now() + 3_600_000 };
    expect(dims.breakdown({ ...window, dimension: 'country' })).toEqual({ total: 2, entries: [{ value: 'Germany', count: 1 }, { value: 'United Kingdom', count: 1 }] });
    expect(dims.breakdown({ ...window, dimension: 'device' })).toEqual({ total: 2, entries: [{ value: 'desktop', count: 1 }, { value: 'mobile', count: 1 }] });
  });

  it('ignore X-Forwarded-For from a peer that is not a trusted proxy (the peer is loopback: no geo)', async () => {
    const { view, client } = await setup([]);
    const s = await view({ 'user-agent': CHROME_WINDOWS, 'x-forwarded-for': '81.2.69.142' });
    expect(client(s.sessionId)).toEqual({ browser: 'Chrome', os: 'Windows', deviceType: 'desktop' }); // no country, country code or city
  });
});

describe('telemetry rows of an enriched session', () => {
  it("carry the server's browser, os, deviceType and geoData on the first rows, over the page's claims", async () => {
    const { t, view } = await setup(['127.0.0.1']);
    const { sessionId, viewerToken } = await view({ 'user-agent': CHROME_WINDOWS, 'x-forwarded-for': '81.2.69.142' });
    const post = (rows: unknown[]) =>
      fetch(`${t.started.publicUrls.platform}/api/v1/telemetry`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-viewer-token': viewerToken },
        body: JSON.stringify({ sessionId, rows }),
      });
    const claims = { browser: 'Firefox 133', os: 'Linux', deviceType: 'mobile', geoData: { country: 'Atlantis', city: 'Nowhere' }, domainUrl: 'https://game.example.com', embedded: true };
    const stats = { timestamp: '2026-11-21T06:00:05.000Z', FPS: '30', framesDecoded: '150' };
    expect((await post([{ logType: 'Webrtc', event: 'sdpOffer', timestamp: '2026-11-21T06:00:00.000Z', ...claims }, { logType: 'Webrtc', event: 'sdpAnswer', timestamp: '2026-11-21T06:00:01.000Z' }, stats])).status).toBe(204);
    expect((await post([{ logType: 'Webrtc', event: 'connected', timestamp: '2026-11-21T06:00:02.000Z' }, { logType: 'Webrtc', event: 'videoInitialized', timestamp: '2026-11-21T06:00:03.000Z', os: 'Amiga' }, { ...stats, browser: 'x' }])).status).toBe(204);

    const rows = telemetryRows(t.cp, sessionId).map((r) => r.row);
    const server = { browser: 'Chrome', os: 'Windows', deviceType: 'desktop', geoData: { country: 'United Kingdom', countryCode: 'GB', city: 'London' } };
    // First batch: its event rows get the server's details; the page keeps domainUrl and embedded.
    expect(rows[0]).toEqual({ logType: 'Webrtc', event: 'sdpOffer', timestamp: '2026-11-21T06:00:00.000Z', sessionId, ...server, domainUrl: 'https://game.example.com', embedded: true });
    expect(rows[1]).toEqual({ logType: 'Webrtc', event: 'sdpAnswer', timestamp: '2026-11-21T06:00:01.000Z', sessionId, ...server });
    expect(rows[2]).toEqual({ ...stats, sessionId }); // statistics rows: strings only
    // Later batches: untouched, except a claim, which the server's value replaces.
    expect(rows[3]).toEqual({ logType: 'Webrtc', event: 'connected', timestamp: '2026-11-21T06:00:02.000Z', sessionId });
    expect(rows[4]).toEqual({ logType: 'Webrtc', event: 'videoInitialized', timestamp: '2026-11-21T06:00:03.000Z', sessionId, ...server });
    expect(rows[5]).toEqual({ ...stats, sessionId });
  });
});
