// The build archive's extract and scan on real zips from the fixture generator: every valid
// layout's manifest, every hostile archive's objection with nothing left on disk, CRC and size
// lies caught while extracting, free disk, a write failing mid-way, ZIP64 small and past 4 GiB.
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { crc32 } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ArchiveRejection,
  DEFAULT_ARCHIVE_LIMITS,
  extractArchive,
  inspectArchive,
  verifyArchive,
  type ArchiveLimits,
  type ExtractProgress,
} from '@pixelfleet/build-archive';
import { buildEntries, DEFAULT_PROJECT, hostileZips, writeBuildZip, writeZip64Build, ZIP64_PAK_BYTES, type BuildLayout } from '../support/build-zips';
import { crc32OfZeros, writeZip } from '../support/zip-writer';
import type { ExtractChildOutcome } from '../support/extract-child';

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL('../support/extract-child.ts', import.meta.url));
const P = DEFAULT_PROJECT;
const LIMITS: ArchiveLimits = { ...DEFAULT_ARCHIVE_LIMITS, freeSpaceMarginBytes: 0 };

let root: string;
let zips: string;
beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), 'pf-build-archive-'));
  zips = join(root, 'zips');
  await mkdir(zips);
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

/** A fresh, empty parent folder for one extraction. */
async function workDir(): Promise<string> {
  return mkdtemp(join(root, 'work-'));
}

async function rejectionOf(promise: Promise<unknown>): Promise<ArchiveRejection> {
  try {
    await promise;
  } catch (err) {
    if (err instanceof ArchiveRejection) return err;
    throw err;
  }
  throw new Error('expected an ArchiveRejection');
}

const EXPECTED: Record<BuildLayout, { platform: string; executable: string; baseArgs: string[] }> = {
  'windows-shipping': { platform: 'windows', executable: `${P}/Binaries/Win64/${P}-Win64-Shipping.exe`, baseArgs: [P] },
  'windows-development': { platform: 'windows', executable: `${P}/Binaries/Win64/${P}.exe`, baseArgs: [P] },
  'windows-blueprint': { platform: 'windows', executable: 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', baseArgs: [`../../../${P}/${P}.uproject`] },
  linux: { platform: 'linux', executable: `${P}/Binaries/Linux/${P}-Linux-Shipping`, baseArgs: [P] },
};

function expectedSizes(layout: BuildLayout) {
  const files = buildEntries(layout).filter((e) => !e.name.endsWith('/'));
  return { fileCount: files.length, totalBytes: files.reduce((sum, e) => sum + Buffer.byteLength(e.data ?? ''), 0) };
}

describe('valid builds', () => {
  for (const writer of ['archiver', 'hand'] as const) {
    for (const layout of Object.keys(EXPECTED) as BuildLayout[]) {
      it(`${layout} (${writer}) inspects and verifies to its manifest and extracts byte for byte`, async () => {
        const zip = await writeBuildZip(zips, layout, { writer, fileName: `${layout}-${writer}.zip` });
        const manifest = { ...EXPECTED[layout], projectName: P, ...expectedSizes(layout) };
        expect(await inspectArchive(zip, LIMITS)).toEqual(manifest);
        const checked: ExtractProgress[] = [];
        expect(await verifyArchive(zip, LIMITS, { onProgress: (p) => checked.push(p) })).toEqual(manifest);
        expect(checked.at(-1)).toEqual({ bytesDone: manifest.totalBytes, bytesTotal: manifest.totalBytes });

        const dest = join(await workDir(), 'build');
        const progress: ExtractProgress[] = [];
        expect(await extractArchive(zip, dest, LIMITS, { onProgress: (p) => progress.push(p) })).toEqual(manifest);
        for (const entry of buildEntries(layout)) {
          if (entry.name.endsWith('/')) expect((await stat(join(dest, entry.name))).isDirectory()).toBe(true);
          else expect(crc32(await readFile(join(dest, entry.name)))).toBe(crc32(entry.data ?? ''));
        }
        // Progress climbs to the total; the temp folder is gone (renamed into place).
        expect(progress.at(-1)).toEqual({ bytesDone: manifest.totalBytes, bytesTotal: manifest.totalBytes });
        expect(progress.every((p, i) => i === 0 || p.bytesDone > (progress[i - 1]?.bytesDone ?? 0))).toBe(true);
        expect(await readdir(join(dest, '..'))).toEqual(['build']);
      });
    }
  }

  it('sets the executable bit from the external attributes, and the Linux binary runs', async () => {
    const zip = await writeBuildZip(zips, 'linux', { fileName: 'linux-run.zip' });
    const dest = join(await workDir(), 'build');
    const manifest = await extractArchive(zip, dest, LIMITS);
    const binary = join(dest, manifest.executable);
    expect((await stat(binary)).mode & 0o111).not.toBe(0);
    expect((await stat(join(dest, `${P}.sh`))).mode & 0o100).not.toBe(0);
    expect((await stat(join(dest, `${P}/Content/Paks/${P}-Linux.pak`))).mode & 0o111).toBe(0);
    const { stdout } = await run(binary, manifest.baseArgs);
    expect(stdout).toBe(`launched with: ${P}\n`);
  });

  it('reads ZIP64 fields and end records (archiver forceZip64 and the hand writer) and extracts them', async () => {
    for (const writer of ['archiver', 'hand'] as const) {
      const zip = await writeBuildZip(zips, 'windows-shipping', { writer, forceZip64: true, fileName: `zip64-${writer}.zip` });
      const bytes = await readFile(zip);
      expect(bytes.includes(Buffer.from([0x50, 0x4b, 0x06, 0x06]))).toBe(true); // a ZIP64 end record
      const dest = join(await workDir(), 'build');
      expect((await extractArchive(zip, dest, LIMITS)).executable).toBe(EXPECTED['windows-shipping'].executable);
    }
  });

  it('inspects a sparse ZIP64 build past 4 GiB from its central directory alone', async () => {
    const zip = await writeZip64Build(zips);
    expect((await stat(zip)).size).toBeGreaterThan(2 ** 32);
    expect((await stat(zip)).blocks * 512).toBeLessThan(16 * 1024 * 1024); // sparse: no 4 GiB of disk I/O
    const others = expectedSizes('linux').totalBytes - 1.5 * 1024 * 1024;
    expect(await inspectArchive(zip, LIMITS)).toEqual({ ...EXPECTED.linux, projectName: P, fileCount: expectedSizes('linux').fileCount, totalBytes: ZIP64_PAK_BYTES + others });
    // The free-space check uses the 64-bit sizes: 4 GiB free is not enough.
    const dest = join(await workDir(), 'build');
    const full = await rejectionOf(extractArchive(zip, dest, LIMITS, { freeBytes: () => Promise.resolve(2 ** 32) }));
    expect(full.code).toBe('DISK_FULL');
    expect(await readdir(join(dest, '..'))).toEqual([]);
  });
});

describe('hostile archives', () => {
  for (const fixture of hostileZips()) {
    it(`${fixture.name}: ${fixture.caughtBy} rejects it with its objection (verify and extract alike) and leaves nothing on disk`, async () => {
      const zip = await fixture.write(zips);
      if (fixture.caughtBy === 'inspection') {
        const r = await rejectionOf(inspectArchive(zip, DEFAULT_ARCHIVE_LIMITS));
        expect([r.code, r.objection]).toEqual([fixture.code, fixture.objection]);
      } else {
        await expect(inspectArchive(zip, DEFAULT_ARCHIVE_LIMITS)).resolves.toMatchObject({ platform: 'windows' });
      }
      const verified = await rejectionOf(verifyArchive(zip, DEFAULT_ARCHIVE_LIMITS));
      expect([verified.code, verified.objection]).toEqual([fixture.code, fixture.objection]);
      // Into a folder that does not exist yet: not even it is left behind.
      const work = await workDir();
      const dest = join(work, 'builds', 'p1', 'build');
      const r = await rejectionOf(extractArchive(zip, dest, DEFAULT_ARCHIVE_LIMITS, { freeBytes: () => Promise.resolve(Number.MAX_SAFE_INTEGER) }));
      expect([r.code, r.objection]).toEqual([fixture.code, fixture.objection]);
      expect(await readdir(work)).toEqual([]);
    });
  }
});

describe('extraction failures', () => {
  it('refuses before writing anything when the disk has too little free space (statfs)', async () => {
    const zip = await writeBuildZip(zips, 'windows-shipping', { fileName: 'disk.zip' });
    const work = await workDir();
    const { totalBytes } = expectedSizes('windows-shipping');
    const limits = { ...DEFAULT_ARCHIVE_LIMITS, freeSpaceMarginBytes: 1024 ** 3 };
    const injected = await rejectionOf(extractArchive(zip, join(work, 'build'), limits, { freeBytes: () => Promise.resolve(512 * 1024 ** 2) }));
    expect([injected.code, injected.objection]).toEqual([
      'DISK_FULL',
      `the server has too little free disk to extract the build: it needs ${(totalBytes / 1024 ** 2).toFixed(1)} MiB (plus 1.0 GiB to spare) and 512.0 MiB is free`,
    ]);
    // The real statfs: no disk has a margin of 1 PiB free.
    const real = await rejectionOf(extractArchive(zip, join(work, 'build'), { ...DEFAULT_ARCHIVE_LIMITS, freeSpaceMarginBytes: 1024 ** 5 }));
    expect(real.objection).toMatch(
      new RegExp(`^the server has too little free disk to extract the build: it needs ${(totalBytes / 1024 ** 2).toFixed(1)} MiB \\(plus 1024\\.0 TiB to spare\\) and [\\d.]+ [KMGT]iB is free$`),
    );
    expect(await readdir(work)).toEqual([]);
  });

  it('removes what it wrote when a write fails mid-way (a file size limit: EFBIG)', async () => {
    const zip = await writeBuildZip(zips, 'windows-shipping', { fileName: 'efbig.zip' });
    const work = await workDir();
    // A 1 MiB file size limit (512-byte blocks) and SIGXFSZ ignored: writing the 1.5 MiB pak fails with EFBIG.
    const { stdout } = await run('sh', ['-c', `trap '' XFSZ; ulimit -f 2048; exec node --conditions=source --import tsx "$0" "$@"`, CHILD, zip, join(work, 'build')]);
    const outcome = JSON.parse(stdout) as ExtractChildOutcome;
    expect(outcome).toEqual({ code: 'WRITE_FAILED', objection: 'the server could not write the extracted build (EFBIG)', bytesDone: expect.any(Number) as number, left: [] });
    expect(outcome.bytesDone).toBeGreaterThan(64 * 1024); // the files before the pak were on disk, then removed
  });

  it('removes what it wrote when the caller aborts mid-way', async () => {
    const zip = await writeBuildZip(zips, 'windows-shipping', { fileName: 'abort.zip' });
    const work = await workDir();
    const controller = new AbortController();
    const error = await extractArchive(zip, join(work, 'build'), LIMITS, {
      onProgress: (p) => {
        if (p.bytesDone > 100 * 1024) controller.abort();
      },
      signal: controller.signal,
    }).catch((err: unknown) => err);
    expect((error as Error).name).toBe('AbortError');
    expect(await readdir(work)).toEqual([]);
  });

  it('refuses a destination that already exists, touching nothing', async () => {
    const zip = await writeBuildZip(zips, 'linux', { fileName: 'exists.zip' });
    const work = await workDir();
    await writeFile(join(work, 'build'), 'mine');
    await expect(extractArchive(zip, join(work, 'build'), LIMITS)).rejects.toThrow(/already exists/);
    expect(await readdir(work)).toEqual(['build']);
    expect(await readFile(join(work, 'build'), 'utf8')).toBe('mine');
  });

  it('reports a stored entry whose data is cut short as a damaged archive', async () => {
    const zip = join(zips, 'overflow.zip');
    // The central directory claims more stored bytes than the file holds after the local header.
    await writeZip(zip, [...buildEntries('linux'), { name: `${P}/tail.bin`, data: 'short', method: 'store', lie: { compressedSize: 5000, uncompressedSize: 5000 } }]);
    const r = await rejectionOf(extractArchive(zip, join(await workDir(), 'build'), LIMITS));
    expect([r.code, r.objection]).toEqual(['CORRUPT', `the archive is truncated or damaged at entry "${P}/tail.bin"`]);
    const v = await rejectionOf(verifyArchive(zip, LIMITS));
    expect([v.code, v.objection]).toEqual(['CORRUPT', `the archive is truncated or damaged at entry "${P}/tail.bin"`]);
  });

  it('a scan stops when the caller aborts', async () => {
    const zip = await writeBuildZip(zips, 'windows-shipping', { fileName: 'abort-verify.zip' });
    const controller = new AbortController();
    let afterAbort = 0;
    const error = await verifyArchive(zip, LIMITS, {
      onProgress: (p) => {
        if (controller.signal.aborted) afterAbort += 1;
        if (p.bytesDone > 100 * 1024) controller.abort();
      },
      signal: controller.signal,
    }).catch((err: unknown) => err);
    expect((error as Error).name).toBe('AbortError');
    expect(afterAbort).toBeLessThanOrEqual(1);
  });
});

describe('the zip writer behind the fixtures', () => {
  it('computes the CRC-32 of a run of zeros without reading it', () => {
    for (const n of [0, 1, 2, 3, 255, 4096, 1024 * 1024 + 7]) expect(crc32OfZeros(n)).toBe(crc32(Buffer.alloc(n)));
  });

});
