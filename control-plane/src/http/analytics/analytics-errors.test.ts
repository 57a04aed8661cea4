// The analytics API's catalog entries against the spec's analytics error table (exact messages,
// the code, the 92-day window and the read limit), and the edge's readers: ISO instants, windows,
// dimensions, paging, Accept-Encoding. The spec's part is committed beside this file.
import { describe, expect, it } from 'vitest';
import { ApiError, analyticsCodeOf, HTTP_ERRORS } from '../../errors';
import { specSection, tableAfter } from '../../lib/spec-sections';
import { BREAKDOWN_DIMENSIONS } from '../../repositories/session-dimensions';
import { countryCode, dimension, MAX_WINDOW_DAYS, optionalWindow, paging, parseIsoInstant, requiredWindow } from './analytics-request';

const section = specSection(new URL('./spec-analytics-errors.fixture.md', import.meta.url), 'Analytics endpoints:', '### Retry');

/** What a refusal writes: status and the body an analytics route sends. */
function refusal(fn: () => unknown): [number, Record<string, unknown>] {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return [err.status, { message: err.message, code: analyticsCodeOf(err.entry), ...err.fields }];
  }
  throw new Error('not refused');
}

describe('the analytics error rows', () => {
  it("has a committed copy that is the spec's part, word for word, when the spec is beside the repository", () => {
    if (section.fromSpec !== undefined) expect(section.fromCopy).toBe(section.fromSpec);
  });

  it("carries the spec's exact messages for a missing or unknown dimension and missing dates, with VALIDATION_FAILED", () => {
    const rows = tableAfter(`#\n${section.text}`, '#');
    const first = rows.find((r) => r[0] === 'breakdown' && r[1] === '400');
    expect(first?.[2]).toContain(`(message: \`${HTTP_ERRORS.analyticsInvalidDimension.message}\`)`);
    expect(first?.[2]).toContain(`(message: \`${HTTP_ERRORS.analyticsDatesRequired.message}\`)`);
    expect(section.text).toContain('code `VALIDATION_FAILED`');
    expect(section.text).toContain(`a window over ${MAX_WINDOW_DAYS} days`);
    expect(section.text).toContain('More than 300 reads in a minute');
    // The dimensions are the ones the message lists.
    const listed = HTTP_ERRORS.analyticsInvalidDimension.message.replace('Invalid dimension. Must be one of: ', '').split(', ');
    expect(listed.sort()).toEqual([...BREAKDOWN_DIMENSIONS].sort());
    for (const name of ['analyticsInvalidDimension', 'analyticsDatesRequired', 'analyticsInvalidDate', 'analyticsDatesReversed', 'analyticsWindowTooWide'] as const) {
      expect(HTTP_ERRORS[name]).toMatchObject({ status: 400, code: 'VALIDATION_FAILED' });
    }
    expect(HTTP_ERRORS.analyticsRateLimited.status).toBe(429);
  });

  it('gives every entry an analytics route may throw a stable code', () => {
    for (const name of ['invalidApiKey', 'accessDenied', 'projectNotFound', 'sessionNotFound', 'internal', 'missingField', 'analyticsProjectIdRequired', 'analyticsLogFileNotFound'] as const) {
      expect(analyticsCodeOf(name), name).toMatch(/^[A-Z_]+$/);
    }
  });
});

describe('the breakdown query', () => {
  const q = (query: Record<string, string>) => query;

  it('refuses a missing or unknown dimension and missing dates with the spec messages', () => {
    const dim = { message: HTTP_ERRORS.analyticsInvalidDimension.message, code: 'VALIDATION_FAILED', field: 'dimension' };
    expect(refusal(() => dimension(q({})))).toEqual([400, dim]);
    expect(refusal(() => dimension(q({ dimension: 'Country' })))).toEqual([400, dim]);
    expect(refusal(() => dimension(q({ dimension: 'region' })))).toEqual([400, dim]);
    for (const d of BREAKDOWN_DIMENSIONS) expect(dimension(q({ dimension: d }))).toBe(d);
    const dates = { message: 'startDate and endDate are required (ISO format)', code: 'VALIDATION_FAILED', field: 'startDate' };
    expect(refusal(() => requiredWindow(q({ startDate: '2026-01-01' })))).toEqual([400, dates]);
    expect(refusal(() => requiredWindow(q({ endDate: '2026-01-01' })))).toEqual([400, dates]);
    expect(refusal(() => requiredWindow(q({ startDate: '', endDate: '2026-01-01' })))).toEqual([400, dates]);
  });

  it('accepts exactly 92 days and refuses one second (and one millisecond) more, naming startDate and maxDays', () => {
    const wide = { message: 'The window from startDate to endDate may be at most 92 days', code: 'VALIDATION_FAILED', field: 'startDate', maxDays: 92 };
    // Checked on the dates as given; a calendar date as endDate then covers its whole day.
    expect(requiredWindow(q({ startDate: '2026-01-01', endDate: '2026-04-03' }))).toEqual({ fromMs: Date.parse('2026-01-01T00:00:00Z'), toMs: Date.parse('2026-04-03T23:59:59.999Z') });
    expect(refusal(() => requiredWindow(q({ startDate: '2026-01-01', endDate: '2026-04-03T00:00:01Z' })))).toEqual([400, wide]);
    expect(refusal(() => requiredWindow(q({ startDate: '2026-01-01T00:00:00.000Z', endDate: '2026-04-03T00:00:00.001Z' })))).toEqual([400, wide]);
    // Offsets count: 02:00+02:00 is midnight UTC.
    expect(requiredWindow(q({ startDate: '2026-01-01T02:00:00+02:00', endDate: '2026-04-03T00:00:00Z' })).fromMs).toBe(Date.parse('2026-01-01T00:00:00Z'));
    expect(refusal(() => requiredWindow(q({ startDate: '2026-01-02', endDate: '2026-01-01' })))).toEqual([400, { message: 'startDate must not be after endDate', code: 'VALIDATION_FAILED', field: 'startDate' }]);
    // startDate=endDate=<a date>: that whole day, not its first millisecond.
    expect(requiredWindow(q({ startDate: '2026-01-01', endDate: '2026-01-01' }))).toEqual({ fromMs: Date.parse('2026-01-01'), toMs: Date.parse('2026-01-01T23:59:59.999Z') });
    expect(requiredWindow(q({ startDate: '2026-01-01', endDate: '2026-01-01T00:00:00Z' }))).toEqual({ fromMs: Date.parse('2026-01-01'), toMs: Date.parse('2026-01-01') });
  });

  it('reads ISO 8601 dates and date-times with a zone, and nothing else', () => {
    expect(parseIsoInstant('2026-03-01')).toBe(Date.parse('2026-03-01T00:00:00Z'));
    expect(parseIsoInstant('2026-03-01T10:20Z')).toBe(Date.parse('2026-03-01T10:20:00Z'));
    expect(parseIsoInstant('2026-03-01T10:20:30.123456Z')).toBe(Date.parse('2026-03-01T10:20:30.123Z'));
    expect(parseIsoInstant('2026-03-01T10:20:30-05:30')).toBe(Date.parse('2026-03-01T15:50:30Z'));
    expect(parseIsoInstant('2024-02-29')).toBe(Date.parse('2024-02-29T00:00:00Z'));
    for (const bad of ['2026-02-29', '2026-13-01', '2026-04-31', '2026-03-01T24:00Z', '2026-03-01T10:20', '03/01/2026', '1772323200000', 'yesterday', '2026-3-1', ' 2026-03-01', '2026-03-01T10:20:61Z']) {
      expect(parseIsoInstant(bad), bad).toBeUndefined();
    }
    expect(refusal(() => optionalWindow(q({ endDate: 'soon' })))).toEqual([400, { message: 'endDate must be an ISO 8601 date and time', code: 'VALIDATION_FAILED', field: 'endDate' }]);
    expect(optionalWindow(q({}))).toEqual({});
  });

  it('takes countryCode only with dimension=city, as two letters, upper-cased', () => {
    expect(countryCode(q({ countryCode: 'de' }), 'city')).toBe('DE');
    expect(countryCode(q({}), 'city')).toBeUndefined();
    expect(refusal(() => countryCode(q({ countryCode: 'DE' }), 'country'))).toEqual([400, { message: 'countryCode applies only to dimension=city', code: 'VALIDATION_FAILED', field: 'countryCode' }]);
    expect(refusal(() => countryCode(q({ countryCode: 'DEU' }), 'city'))[1]).toMatchObject({ field: 'countryCode' });
  });
});

describe('paging', () => {
  it('defaults, takes 1 to 1000 and skip from 0, and refuses anything else naming the field', () => {
    expect(paging({}, 100)).toEqual({ limit: 100, skip: 0 });
    expect(paging({ limit: '1000', skip: '123456' }, 50)).toEqual({ limit: 1000, skip: 123456 });
    for (const [limit, skip, field] of [['0', '0', 'limit'], ['1001', '0', 'limit'], ['-5', '0', 'limit'], ['0x10', '0', 'limit'], ['5', '-1', 'skip'], ['5', '1.0', 'skip']]) {
      expect(refusal(() => paging({ limit, skip }, 100))[1]).toMatchObject({ code: 'VALIDATION_FAILED', field });
    }
  });
});
