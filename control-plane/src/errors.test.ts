// The error catalog against the spec: every per-endpoint row and every example message of the
// build & project API is in HTTP_ERRORS with the same status and exact text. The spec's part is
// committed (fixtures/service-spec-errors.md), so the check runs in every clone; where the spec
// itself lies beside the repository, the fixture must still be its text, word for word.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { ApiError, HTTP_ERRORS, type HttpErrorName } from './errors';

const SPEC_PATH = fileURLToPath(new URL('../../../shared/spec/service-spec.md', import.meta.url));
/** The spec from `### HTTP status codes` up to `Analytics endpoints:` (the build & project API's errors). */
const SPEC_ERRORS = readFileSync(fileURLToPath(new URL('./fixtures/service-spec-errors.md', import.meta.url)), 'utf8');
const FIXTURE_START = '### HTTP status codes';
const FIXTURE_END = 'Analytics endpoints:';

/** The spec's rows (status, exact message) and the catalog entry that must carry each. */
const SPEC_ROWS: [HttpErrorName, number, string][] = [
  ['userStatsParamsRequired', 400, 'projectId, userId and apikey are required'],
  ['userIdRequired', 400, 'User ID is required'],
  ['invalidUser', 401, 'Invalid User'],
  ['invalidApiKey', 401, 'Unauthorized: Invalid API Key'],
  ['accessDenied', 403, 'Access denied'],
  ['forbidden', 403, 'Forbidden'],
  ['projectNotFound', 404, 'Project not found'],
  ['unsupportedMediaType', 415, 'Content-Type must be application/json'],
  ['internal', 500, 'Internal server error'],
];

describe('the error catalog', () => {
  it.each(SPEC_ROWS)('%s is %i %s', (name, status, message) => {
    expect(HTTP_ERRORS[name]).toEqual({ status, message });
    expect(new ApiError(name)).toMatchObject({ status, message });
  });

  it('formats the spec example messages with parameters', () => {
    expect(new ApiError('missingField', { field: 'fileUrl' })).toMatchObject({ status: 400, message: 'Missing required field: fileUrl' });
    expect(new ApiError('buildCallRateLimited', { wait: '2 minutes' })).toMatchObject({ status: 429, message: 'Rate limit exceeded. Try again in 2 minutes.' });
  });

  it("has a fixture that is the spec's part, when the spec is beside the repository", () => {
    expect(SPEC_ERRORS.startsWith(FIXTURE_START)).toBe(true);
    expect(SPEC_ERRORS).not.toContain(FIXTURE_END);
    // CI clones may not carry ../shared: there the committed fixture stands for it.
    if (!existsSync(SPEC_PATH)) return;
    const spec = readFileSync(SPEC_PATH, 'utf8');
    expect(spec.slice(spec.indexOf(FIXTURE_START), spec.indexOf(FIXTURE_END))).toBe(SPEC_ERRORS);
  });

  it('matches the spec text, row by row', () => {
    const spec = SPEC_ERRORS;
    // Table rows start `| 401 |` and quote the message; prose reads 401 `Invalid User`.
    for (const [, status, message] of SPEC_ROWS) {
      const inTable = spec.split('\n').some((line) => line.startsWith(`| ${status} |`) && line.includes(`\`${message}\``));
      const inProse = spec.includes(`${status} \`${message}\``);
      expect(inTable || inProse, `${status} ${message}`).toBe(true);
    }
    // Every per-endpoint row of the build & project API has a catalog entry.
    const catalog = new Set(Object.values(HTTP_ERRORS).map((e) => `${e.status} ${e.message}`));
    const tables = spec.slice(spec.indexOf('### Per endpoint'));
    const rows = [...tables.matchAll(/^\| (\d{3}) \| `([^`]+)` \|/gm)];
    expect(rows.length).toBe(10);
    for (const m of rows) expect(catalog, `${m[1]} ${m[2]}`).toContain(`${m[1]} ${m[2]}`);
    expect(spec).toContain('Missing required field: fileUrl');
    expect(spec).toContain('`Content-Type must be application/json`');
    expect(spec).toContain('`Rate limit exceeded. Try again in 2 minutes.`');
    expect(spec).toContain('403 `Forbidden` when the key owner has no access');
  });
});
