// GET /api/v1/analytics/projects/{projectId}/analytics/breakdown over real HTTP: sessions created
// through the session service with their client dimensions (as the share socket records them),
// every spec error row with its exact message and code, the 92-day boundary, the inclusive
// endDate (a calendar date covers its whole day), the city filter, and percentages that add up to 100.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { startApiFixture, type Account, type ApiFixture } from './api-fixture';

const DAY = 86_400_000;
const D0 = Date.parse('2026-03-01T10:00:00.000Z');
const clock = new ManualClock(D0);
const at = (ms: number) => new Date(ms).toISOString();

let f: ApiFixture;
let a: Account;
let other: Account;

const berlin = { browser: 'Chrome', os: 'Windows', deviceType: 'desktop', country: 'Germany', countryCode: 'DE', city: 'Berlin' };
const munich = { browser: 'Firefox', os: 'Linux', deviceType: 'desktop', country: 'Germany', countryCode: 'DE', city: 'Munich' };
const paris = { browser: 'Mobile Safari', os: 'iOS', deviceType: 'mobile', country: 'France', countryCode: 'FR', city: 'Paris' };

async function breakdown(projectId: string, query: Record<string, string>, key: string | null = a.apiKey): Promise<[number, Record<string, unknown>]> {
  const url = `${f.t.started.httpOrigin}/api/v1/analytics/projects/${projectId}/analytics/breakdown?${new URLSearchParams(query).toString()}`;
  const res = await fetch(url, { headers: key === null ? {} : { 'x-api-key': key } });
  return [res.status, (await res.json()) as Record<string, unknown>];
}

beforeAll(async () => {
  f = await startApiFixture({ clock });
  a = await f.account();
  other = await f.account();
  const project = f.t.cp.accounts.requireProject(a.projectId);
  // At D0: 3 in Berlin, 2 in Munich, 1 in Paris, 1 with nothing known (a private address, a bot).
  for (const client of [berlin, berlin, berlin, munich, munich, paris, {}]) f.t.cp.sessions.create(project, client);
  // At D0 + 92 days exactly: one more in Paris (the inclusive end of a 92-day window).
  clock.advance(92 * DAY);
  f.t.cp.sessions.create(project, paris);
  // And a second later: outside it.
  clock.advance(1_000);
  f.t.cp.sessions.create(project, paris);
});
afterAll(async () => {
  await f.close();
});

const error = (message: string, code: string, extra: Record<string, unknown> = {}) => ({ message, code, ...extra });
const day = { startDate: '2026-03-01', endDate: '2026-03-02' };

describe('the breakdown', () => {
  it('groups by each dimension with counts, total and percentages that add up to 100', async () => {
    expect(await breakdown(a.projectId, { dimension: 'country', ...day })).toEqual([
      200,
      {
        success: true,
        projectId: a.projectId,
        dimension: 'country',
        total: 6,
        count: 2,
        breakdown: [
          { value: 'Germany', count: 5, percentage: 83.33 },
          { value: 'France', count: 1, percentage: 16.67 },
        ],
      },
    ]);
    const [, city] = await breakdown(a.projectId, { dimension: 'city', ...day });
    expect(city).toMatchObject({ total: 6, count: 3 });
    expect(city.breakdown).toEqual([
      { value: 'Berlin', count: 3, percentage: 50, country: 'Germany', countryCode: 'DE' },
      { value: 'Munich', count: 2, percentage: 33.33, country: 'Germany', countryCode: 'DE' },
      { value: 'Paris', count: 1, percentage: 16.67, country: 'France', countryCode: 'FR' },
    ]);
    const [, device] = await breakdown(a.projectId, { dimension: 'device', ...day });
    expect(device.breakdown).toEqual([
      { value: 'desktop', count: 5, percentage: 83.33 },
      { value: 'mobile', count: 1, percentage: 16.67 },
    ]);
    for (const dimension of ['country', 'city', 'browser', 'os', 'device']) {
      const [status, body] = await breakdown(a.projectId, { dimension, ...day });
      const entries = body.breakdown as { count: number; percentage: number }[];
      expect([dimension, status, entries.reduce((sum, e) => sum + e.count, 0)]).toEqual([dimension, 200, body.total]);
      // Two decimals each, adding up to 100 in hundredths.
      expect([dimension, Math.round(entries.reduce((sum, e) => sum + e.percentage * 100, 0))]).toEqual([dimension, 10_000]);
      for (const e of entries) expect(Number.isInteger(Math.round(e.percentage * 100)) && Math.abs(e.percentage * 100 - Math.round(e.percentage * 100)) < 1e-9).toBe(true);
    }
    const [, browser] = await breakdown(a.projectId, { dimension: 'browser', ...day });
    expect((browser.breakdown as { percentage: number }[]).map((e) => e.percentage)).toEqual([50, 33.33, 16.67]);
  });

  it('reads a calendar date as endDate as its whole day: startDate=endDate=<that day> holds its sessions', async () => {
    // The sessions of D0 were created at 10:00 UTC.
    const [status, body] = await breakdown(a.projectId, { dimension: 'country', startDate: '2026-03-01', endDate: '2026-03-01' });
    expect([status, body.total]).toEqual([200, 6]);
    // A date-time end is an instant: 00:00 of that day holds none of them.
    const [, instant] = await breakdown(a.projectId, { dimension: 'country', startDate: '2026-03-01', endDate: '2026-03-01T00:00:00Z' });
    expect(instant.total).toBe(0);
  });

  it('restricts the cities to one country with countryCode (any case)', async () => {
    const [status, body] = await breakdown(a.projectId, { dimension: 'city', ...day, countryCode: 'de' });
    expect([status, body.total, body.breakdown]).toEqual([
      200,
      5,
      [
        { value: 'Berlin', count: 3, percentage: 60, country: 'Germany', countryCode: 'DE' },
        { value: 'Munich', count: 2, percentage: 40, country: 'Germany', countryCode: 'DE' },
      ],
    ]);
  });

  it('accepts exactly 92 days, endDate inclusive, and refuses one second more', async () => {
    const window = { dimension: 'country', startDate: at(D0), endDate: at(D0 + 92 * DAY) };
    const [status, body] = await breakdown(a.projectId, window);
    expect([status, body.total, body.breakdown]).toEqual([
      200,
      7,
      [
        { value: 'Germany', count: 5, percentage: 71.43 },
        { value: 'France', count: 2, percentage: 28.57 },
      ],
    ]);
    expect(await breakdown(a.projectId, { ...window, endDate: at(D0 + 92 * DAY + 1_000) })).toEqual([
      400,
      error('The window from startDate to endDate may be at most 92 days', 'VALIDATION_FAILED', { field: 'startDate', maxDays: 92 }),
    ]);
    // An empty window is an empty breakdown.
    expect(await breakdown(a.projectId, { dimension: 'os', startDate: '2025-01-01', endDate: '2025-01-31' })).toEqual([
      200,
      { success: true, projectId: a.projectId, dimension: 'os', total: 0, count: 0, breakdown: [] },
    ]);
  });

  it('answers every spec error row with its status, exact message and code', async () => {
    const invalidDimension = error('Invalid dimension. Must be one of: country, city, browser, device, os', 'VALIDATION_FAILED', { field: 'dimension' });
    const datesRequired = error('startDate and endDate are required (ISO format)', 'VALIDATION_FAILED', { field: 'startDate' });
    const rows: [string, string, Record<string, string>, string | null, number, Record<string, unknown>][] = [
      ['dimension missing', a.projectId, { ...day }, a.apiKey, 400, invalidDimension],
      ['dimension unknown', a.projectId, { dimension: 'region', ...day }, a.apiKey, 400, invalidDimension],
      ['dimension in another case', a.projectId, { dimension: 'Country', ...day }, a.apiKey, 400, invalidDimension],
      ['dimension before dates', a.projectId, {}, a.apiKey, 400, invalidDimension],
      ['startDate missing', a.projectId, { dimension: 'os', endDate: '2026-03-02' }, a.apiKey, 400, datesRequired],
      ['endDate missing', a.projectId, { dimension: 'os', startDate: '2026-03-01' }, a.apiKey, 400, datesRequired],
      ['both dates missing', a.projectId, { dimension: 'os' }, a.apiKey, 400, datesRequired],
      ['startDate not ISO', a.projectId, { dimension: 'os', startDate: '1 March 2026', endDate: '2026-03-02' }, a.apiKey, 400, error('startDate must be an ISO 8601 date and time', 'VALIDATION_FAILED', { field: 'startDate' })],
      ['endDate not ISO', a.projectId, { dimension: 'os', startDate: '2026-03-01', endDate: '2026-03-32' }, a.apiKey, 400, error('endDate must be an ISO 8601 date and time', 'VALIDATION_FAILED', { field: 'endDate' })],
      ['startDate after endDate', a.projectId, { dimension: 'os', startDate: '2026-03-02', endDate: '2026-03-01' }, a.apiKey, 400, error('startDate must not be after endDate', 'VALIDATION_FAILED', { field: 'startDate' })],
      ['93 days', a.projectId, { dimension: 'os', startDate: '2026-01-01', endDate: '2026-04-04' }, a.apiKey, 400, error('The window from startDate to endDate may be at most 92 days', 'VALIDATION_FAILED', { field: 'startDate', maxDays: 92 })],
      ['window refused before the key is looked up', a.projectId, { dimension: 'os', startDate: '2026-01-01', endDate: '2026-04-04' }, 'pfk_wrong', 400, error('The window from startDate to endDate may be at most 92 days', 'VALIDATION_FAILED', { field: 'startDate', maxDays: 92 })],
      ['countryCode with another dimension', a.projectId, { dimension: 'browser', ...day, countryCode: 'DE' }, a.apiKey, 400, error('countryCode applies only to dimension=city', 'VALIDATION_FAILED', { field: 'countryCode' })],
      ['countryCode not two letters', a.projectId, { dimension: 'city', ...day, countryCode: 'DEU' }, a.apiKey, 400, error('countryCode must be a two-letter ISO 3166-1 country code', 'VALIDATION_FAILED', { field: 'countryCode' })],
      ['no key', a.projectId, { dimension: 'os', ...day }, null, 401, error('Unauthorized: Invalid API Key', 'UNAUTHORIZED')],
      ['wrong key', a.projectId, { dimension: 'os', ...day }, 'pfk_wrong', 401, error('Unauthorized: Invalid API Key', 'UNAUTHORIZED')],
      ['project of another account', other.projectId, { dimension: 'os', ...day }, a.apiKey, 403, error('Access denied', 'FORBIDDEN')],
      ['no such project', 'prj_nothing', { dimension: 'os', ...day }, a.apiKey, 404, error('Project not found', 'NOT_FOUND')],
    ];
    for (const [why, projectId, query, key, status, body] of rows) {
      expect([why, ...(await breakdown(projectId, query, key))]).toEqual([why, status, body]);
    }
  });

  it('lets a READONLY member read and refuses a removed member on the next request', async () => {
    const member = await f.user();
    await f.t.cp.accounts.addMember(a.projectId, member.userId, 'READONLY');
    expect((await breakdown(a.projectId, { dimension: 'country', ...day }, member.apiKey))[0]).toBe(200);
    f.t.cp.accounts.removeMember(a.projectId, member.userId);
    expect(await breakdown(a.projectId, { dimension: 'country', ...day }, member.apiKey)).toEqual([403, error('Access denied', 'FORBIDDEN')]);
  });
});
