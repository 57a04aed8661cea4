// docs/errors.md is the HTTP error catalogue as a reader sees it: one row per HTTP_ERRORS entry,
// with its status, exact message and analytics `code`, and nothing else.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { HTTP_ERRORS, analyticsCodeOf, type HttpErrorName } from '@pixelfleet/control-plane';

const PAGE = new URL('../../docs/errors.md', import.meta.url);

describe('docs/errors.md', () => {
  it('lists every HTTP error of the catalogue with its status, message and code, and no other', () => {
    const rows = readFileSync(PAGE, 'utf8')
      .split('\n')
      .filter((line) => /^\| `\w+` \|/.test(line))
      .map((line) => {
        const [name, status, message, code] = line.split(' | ').map((cell) => cell.replace(/^\| |`| \|$/g, '').trim());
        return { name, status: Number(status), message, code: code === '—' ? undefined : code };
      });
    const catalogue = (Object.keys(HTTP_ERRORS) as HttpErrorName[]).map((name) => ({
      name,
      status: HTTP_ERRORS[name].status,
      message: HTTP_ERRORS[name].message,
      code: analyticsCodeOf(name),
    }));
    expect(rows).toEqual(catalogue);
  });
});
