// The door of @pixelfleet/build-archive must stay light: the control plane and the agent both
// import it, and it must load neither werift nor anything else of the agent.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import * as door from './index';

const HERE = import.meta.dirname;
const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]/gm;

describe('@pixelfleet/build-archive', () => {
  it('imports only its own files, yauzl, node built-ins and @pixelfleet/common (which every process loads anyway)', () => {
    const sources = readdirSync(HERE).filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'));
    const specifiers = sources.flatMap((f) => [...readFileSync(join(HERE, f), 'utf8').matchAll(IMPORT)].map((m) => m[1] ?? ''));
    expect(specifiers.length).toBeGreaterThan(10);
    const foreign = specifiers.filter((s) => !(/^\.\/[\w-]+$/.test(s) || s.startsWith('node:') || s === 'yauzl' || s === '@pixelfleet/common'));
    expect(foreign).toEqual([]);
  });

  it('names what the pipeline and the agent use', () => {
    expect(Object.keys(door).sort()).toEqual([
      'ArchiveDownloadError',
      'ArchiveRejection',
      'DEFAULT_ARCHIVE_DOWNLOAD_RETRY',
      'DEFAULT_ARCHIVE_LIMITS',
      'byteWords',
      'downloadArchive',
      'extractArchive',
      'formatBytes',
      'inspectArchive',
      'openEntryData',
      'readCentralDirectory',
      'sizeOnDisk',
      'statusWords',
      'verifyArchive',
    ]);
  });
});
