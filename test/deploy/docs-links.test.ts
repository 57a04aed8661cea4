// Every relative link in the README, docs/ and the packages' READMEs resolves in a clone: the file
// exists, and an #anchor names one of its headings (GitHub's slugs). Links out of the repository
// (the spec and design notes live beside it, not in it) are named as text, never linked.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = resolve(import.meta.dirname, '../..');

function markdownFiles(): string[] {
  const files = [join(ROOT, 'README.md')];
  for (const name of readdirSync(join(ROOT, 'docs'))) if (name.endsWith('.md')) files.push(join(ROOT, 'docs', name));
  for (const pkg of ['agent', 'control-plane', 'signaling', 'web-player', 'dashboard', 'proto', 'test', 'agent/src/relay']) {
    const readme = join(ROOT, pkg, 'README.md');
    if (existsSync(readme)) files.push(readme);
  }
  return files;
}

/** GitHub's heading anchor: lower case, punctuation but hyphens dropped, spaces to hyphens. */
function headingSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-');
}

function anchorsOf(file: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    const heading = fenced ? null : /^#{1,6}\s+(.*)$/.exec(line);
    if (!heading) continue;
    const slug = headingSlug(heading[1]!);
    const n = seen.get(slug) ?? 0;
    seen.set(slug, n + 1);
    anchors.add(n === 0 ? slug : `${slug}-${n}`);
  }
  return anchors;
}

/** [text](target) outside code spans and fences. */
function linksOf(file: string): string[] {
  const links: string[] = [];
  let fenced = false;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.startsWith('```')) fenced = !fenced;
    if (fenced) continue;
    const prose = line.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push(match[1]!);
  }
  return links;
}

describe('docs links', () => {
  it('makes the slugs GitHub makes', () => {
    expect(headingSlug('The control plane as a Linux service')).toBe('the-control-plane-as-a-linux-service');
    expect(headingSlug('9. Log lines: what they mean')).toBe('9-log-lines-what-they-mean');
    expect(headingSlug('`appAccounts` (Linux)')).toBe('appaccounts-linux');
  });

  it('every relative link resolves in a clone, anchors included', () => {
    const broken: string[] = [];
    const files = markdownFiles();
    expect(files.length).toBeGreaterThan(10);
    for (const file of files) {
      for (const link of linksOf(file)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link)) continue; // https:, mailto: …
        const [path = '', anchor] = link.split('#');
        const target = path === '' ? file : resolve(dirname(file), decodeURIComponent(path));
        const where = `${relative(ROOT, file)} → ${link}`;
        if (!target.startsWith(ROOT + '/') && target !== ROOT) broken.push(`${where} (outside the repository)`);
        else if (!existsSync(target)) broken.push(`${where} (no such file)`);
        else if (anchor !== undefined && statSync(target).isFile() && target.endsWith('.md') && !anchorsOf(target).has(anchor)) broken.push(`${where} (no such heading)`);
      }
    }
    expect(broken).toEqual([]);
  });
});
