// The edge of the analytics API: query parameters read into typed values, each refusal a catalog
// error with `code` VALIDATION_FAILED and the offending `field`. Nothing here reads the database,
// so a bad window is refused before any query.
import { ApiError } from '../../errors';
import { SESSION_STATUSES, type SessionStatus } from '../../sessions/session-status';
import { BREAKDOWN_DIMENSIONS, type BreakdownDimension } from '../../repositories/session-dimensions';
import { queryParam } from '../api/request-fields';
import { ANALYTICS_WINDOW_DAYS } from '../../analytics/analytics-window';

/** Widest window an API-key caller may ask for (spec: Limits), in days; exactly this is accepted. */
export const MAX_WINDOW_DAYS = ANALYTICS_WINDOW_DAYS;
const DAY_MS = 86_400_000;

/** Page sizes: defaults per the spec's Limits, one maximum for every analytics list. */
export const TELEMETRY_PAGE_DEFAULT = 100;
export const LOG_FILE_PAGE_DEFAULT = 50;
export const SESSION_PAGE_DEFAULT = 50;
export const MAX_PAGE_LIMIT = 1_000;
/**
 * The session list's largest page: each entry costs an index read of its snapshots (its status
 * times) on the event loop, so 1,000 entries would hold it for many milliseconds.
 */
export const MAX_SESSION_PAGE_LIMIT = 200;

/**
 * ISO 8601 as the API takes it: a calendar date (`2026-03-01`, that day's 00:00 UTC) or a date
 * and time with seconds optional, fractions optional, and a zone (`Z` or `±hh:mm`) required: a
 * time without a zone names no instant.
 */
const ISO_DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
const ISO_DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

function invalidParameter(field: string, rule: string): ApiError {
  return new ApiError('analyticsInvalidParameter', { field, rule }, {}, { field });
}

/** Whether year-month-day (and the time fields, when given) name a real calendar moment. */
function realMoment(parts: (string | undefined)[]): boolean {
  const [y, mo, d, h = '0', mi = '0', s = '0', zh = '0', zm = '0'] = parts.map((p) => (p === undefined ? undefined : Number(p)));
  if (y === undefined || mo === undefined || d === undefined) return false;
  const days = new Date(Date.UTC(y, mo, 0)).getUTCDate();
  return mo >= 1 && mo <= 12 && d >= 1 && d <= days && Number(h) <= 23 && Number(mi) <= 59 && Number(s) <= 59 && Number(zh) <= 23 && Number(zm) <= 59;
}

/** An ISO 8601 instant in ms since the epoch, or undefined when the text is not one. */
export function parseIsoInstant(text: string): number | undefined {
  const date = ISO_DATE.exec(text);
  if (date) return realMoment(date.slice(1)) ? Date.parse(`${text}T00:00:00Z`) : undefined;
  const m = ISO_DATE_TIME.exec(text);
  if (!m || !realMoment(m.slice(1))) return undefined;
  const ms = Date.parse(text);
  return Number.isFinite(ms) ? ms : undefined;
}

function instant(query: unknown, field: 'startDate' | 'endDate'): number | undefined {
  const text = queryParam(query, field);
  if (text === undefined) return undefined;
  const ms = parseIsoInstant(text);
  if (ms === undefined) throw new ApiError('analyticsInvalidDate', { field }, {}, { field });
  return ms;
}

export interface Window {
  fromMs: number;
  toMs: number;
}

/**
 * startDate ≤ endDate and at most MAX_WINDOW_DAYS apart, or the spec's 400 naming `startDate` (and
 * `maxDays`). Checked on the dates as given; then a calendar date as `endDate` covers its whole
 * day (the end is inclusive): `startDate=endDate=2026-03-01` reads that day, not its first
 * millisecond, and `2026-01-01` to `2026-04-03` is still 92 days.
 */
function checkWindow(fromMs: number, toMs: number, query: unknown): Window {
  if (fromMs > toMs) throw new ApiError('analyticsDatesReversed', {}, {}, { field: 'startDate' });
  if (toMs - fromMs > MAX_WINDOW_DAYS * DAY_MS) {
    throw new ApiError('analyticsWindowTooWide', { maxDays: MAX_WINDOW_DAYS }, {}, { field: 'startDate', maxDays: MAX_WINDOW_DAYS });
  }
  return { fromMs, toMs: toMs + wholeDayOfEnd(query) };
}

/** DAY_MS − 1 when endDate is a calendar date (it takes in its whole day), else 0. */
function wholeDayOfEnd(query: unknown): number {
  const text = queryParam(query, 'endDate');
  return text !== undefined && ISO_DATE.test(text) ? DAY_MS - 1 : 0;
}

/** The breakdown's window: both dates required (the spec's message), ISO, ordered, at most 92 days. */
export function requiredWindow(query: unknown): Window {
  if (queryParam(query, 'startDate') === undefined || queryParam(query, 'endDate') === undefined) throw new ApiError('analyticsDatesRequired', {}, {}, { field: 'startDate' });
  return checkWindow(instant(query, 'startDate') as number, instant(query, 'endDate') as number, query);
}

/**
 * An optional window (telemetry rows): either date may be left out (open on that side); when both
 * are given they must be ordered and at most 92 days apart.
 */
export function optionalWindow(query: unknown): { fromMs?: number; toMs?: number } {
  const fromMs = instant(query, 'startDate');
  const given = instant(query, 'endDate');
  if (fromMs !== undefined && given !== undefined) checkWindow(fromMs, given, query);
  const toMs = given === undefined ? undefined : given + wholeDayOfEnd(query);
  return { ...(fromMs === undefined ? {} : { fromMs }), ...(toMs === undefined ? {} : { toMs }) };
}

/**
 * The session list's window: endDate defaults to now and startDate to 92 days before endDate;
 * given dates are checked as the breakdown's.
 */
export function defaultedWindow(query: unknown, nowMs: number): Window {
  const toMs = instant(query, 'endDate') ?? nowMs;
  const fromMs = instant(query, 'startDate') ?? toMs - MAX_WINDOW_DAYS * DAY_MS;
  return checkWindow(fromMs, toMs, query);
}

export function dimension(query: unknown): BreakdownDimension {
  const value = queryParam(query, 'dimension');
  const found = BREAKDOWN_DIMENSIONS.find((d) => d === value);
  if (found === undefined) throw new ApiError('analyticsInvalidDimension', {}, {}, { field: 'dimension' });
  return found;
}

/** The city breakdown's country filter: two letters (ISO 3166-1 alpha-2, any case), only with dimension=city. */
export function countryCode(query: unknown, dim: BreakdownDimension): string | undefined {
  const value = queryParam(query, 'countryCode');
  if (value === undefined) return undefined;
  if (dim !== 'city') throw invalidParameter('countryCode', 'applies only to dimension=city');
  if (!/^[A-Za-z]{2}$/.test(value)) throw invalidParameter('countryCode', 'must be a two-letter ISO 3166-1 country code');
  return value.toUpperCase();
}

/** `limit` and `skip`: whole numbers written in digits; limit 1 to maxLimit, skip from 0. Past the end is an empty page. */
export function paging(query: unknown, defaultLimit: number, maxLimit = MAX_PAGE_LIMIT): { limit: number; skip: number } {
  const whole = (field: string, fallback: number, min: number, max: number): number => {
    const text = queryParam(query, field);
    if (text === undefined) return fallback;
    const n = /^\d{1,15}$/.test(text) ? Number(text) : NaN;
    if (!(n >= min && n <= max)) {
      throw invalidParameter(field, max === Number.MAX_SAFE_INTEGER ? `must be a whole number from ${min}` : `must be a whole number from ${min} to ${max}`);
    }
    return n;
  };
  return { limit: whole('limit', defaultLimit, 1, maxLimit), skip: whole('skip', 0, 0, Number.MAX_SAFE_INTEGER) };
}

/** The telemetry filter: only `Webrtc` (event rows) is a log type. */
export function logType(query: unknown): 'Webrtc' | undefined {
  const value = queryParam(query, 'logType');
  if (value === undefined) return undefined;
  if (value !== 'Webrtc') throw invalidParameter('logType', 'must be Webrtc');
  return value;
}

export function sessionStatus(query: unknown): SessionStatus | undefined {
  const value = queryParam(query, 'status');
  if (value === undefined) return undefined;
  const found = SESSION_STATUSES.find((s) => s === value);
  if (found === undefined) throw invalidParameter('status', `must be one of: ${SESSION_STATUSES.join(', ')}`);
  return found;
}
