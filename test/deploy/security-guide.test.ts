// docs/security.md names, for each boundary, the tests that hold it: every one must exist, so
// the page cannot go on citing a test that was removed or renamed.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/cli-process';

const PAGE = readFileSync(join(REPO_ROOT, 'docs', 'security.md'), 'utf8');

describe('docs/security.md', () => {
  it('cites only tests that exist, and cites some for every boundary section', () => {
    const cited = [...PAGE.matchAll(/`([\w./-]+\.test\.ts)`/g)].map((m) => m[1]!);
    expect(cited.length).toBeGreaterThan(20);
    expect(cited.filter((path) => !existsSync(join(REPO_ROOT, path)))).toEqual([]);
    const boundaries = PAGE.split('\n### ').slice(1);
    expect(boundaries.map((section) => section.split('\n')[0])).toEqual(['Viewers', 'Customers and team members', 'Operators', 'Agents', 'Apps']);
    for (const section of boundaries) expect(section, section.split('\n')[0]).toMatch(/\.test\.ts`/);
  });
});
