// The error catalog against the spec: every per-endpoint row and every example message of the
// build & project API is in HTTP_ERRORS with the same status and exact text. The spec's part is
// committed (spec-errors.fixture.md), so the check runs in every clone; where the spec itself lies
// beside the repository, the copy must still be its text, word for word (lib/spec-sections.ts).
import { describe, expect, it } from 'vitest';
import { ApiError, HTTP_ERRORS, type HttpErrorName } from './errors';
import { specSection } from './lib/spec-sections';

/** The spec from `### HTTP status codes` up to `Analytics endpoints:` (the build & project API's errors). */
const errorsSection = specSection(new URL('./spec-errors.fixture.md', import.meta.url), '### HTTP status codes', 'Analytics endpoints:');

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

  it("has a committed copy that is the spec's part, word for word, when the spec is beside the repository", () => {
    expect(errorsSection.fromCopy.startsWith('### HTTP status codes')).toBe(true);
    // CI clones may not carry ../shared: there the committed copy stands for it.
    if (errorsSection.fromSpec !== undefined) expect(errorsSection.fromCopy).toBe(errorsSection.fromSpec);
  });

  it('matches the spec text, row by row', () => {
    const spec = errorsSection.text;
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
