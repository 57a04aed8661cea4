// writeJsonAtomic with real files: the secret it writes has exactly its mode, whatever a dead run
// or someone else left at its temp path.
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { ATOMIC_TEMP_SUFFIX, readJsonIfExists, writeJsonAtomic } from './atomic-file';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-atomic-'));
  dirs.push(dir);
  return dir;
}

describe('writeJsonAtomic', () => {
  it('writes the value with mode 0600 by default and leaves no temp file', () => {
    const path = join(tempDir(), 'worker.json');
    writeJsonAtomic(path, { workerToken: 'pfw_x' });
    expect(readJsonIfExists(path)).toEqual({ workerToken: 'pfw_x' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(existsSync(`${path}.${process.pid}${ATOMIC_TEMP_SUFFIX}`)).toBe(false);
  });

  it("does not take the mode of a temp file a dead run left world-readable", () => {
    const path = join(tempDir(), 'worker.json');
    const stale = `${path}.${process.pid}${ATOMIC_TEMP_SUFFIX}`;
    writeFileSync(stale, 'half');
    chmodSync(stale, 0o666);
    writeJsonAtomic(path, { workerToken: 'pfw_x' });
    expect(statSync(path).mode & 0o777).toBe(0o600);
  });

  it('does not write through a link planted at its temp path', () => {
    const dir = tempDir();
    const path = join(dir, 'worker.json');
    const elsewhere = join(dir, 'elsewhere.json');
    writeFileSync(elsewhere, 'untouched');
    symlinkSync(elsewhere, `${path}.${process.pid}${ATOMIC_TEMP_SUFFIX}`);
    writeJsonAtomic(path, { workerToken: 'pfw_x' });
    expect(readFileSync(elsewhere, 'utf8')).toBe('untouched');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(readJsonIfExists(path)).toEqual({ workerToken: 'pfw_x' });
  });
});
