import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { resolveExecutable } from './executable';
import { LaunchError } from './launch-error';

let root: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pixelfleet-build-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

/** Creates the given files (relative to the build root) with a little content. */
function layout(...files: string[]): void {
  for (const f of files) {
    mkdirSync(dirname(join(root, f)), { recursive: true });
    writeFileSync(join(root, f), 'MZ');
  }
}

async function refusal(): Promise<LaunchError> {
  const err = await resolveExecutable(root).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err instanceof LaunchError) return err;
  throw new Error(`expected a LaunchError, got ${String(err)}`);
}

describe('resolveExecutable', () => {
  it('finds a code project binary, not the bootstrap exe, with the project as base argument', async () => {
    layout(
      'CityDemo.exe',
      'CityDemo/Binaries/Win64/CityDemoClient-Win64-Shipping.exe',
      'CityDemo/Content/Paks/CityDemo-Windows.pak',
      'Engine/Binaries/Win64/CrashReportClient.exe',
      'Engine/Binaries/ThirdParty/x.dll',
    );
    expect(await resolveExecutable(root)).toEqual({
      exe: join(root, 'CityDemo/Binaries/Win64/CityDemoClient-Win64-Shipping.exe'),
      baseArgs: ['CityDemo'],
      projectName: 'CityDemo',
    });
  });

  it('matches folder and file names case-insensitively, as Windows does', async () => {
    layout('CityDemo/binaries/WIN64/CityDemo-win64-shipping.EXE');
    expect((await resolveExecutable(root)).exe).toBe(join(root, 'CityDemo/binaries/WIN64/CityDemo-win64-shipping.EXE'));
  });

  it('falls back to a Development binary when there is no Shipping one', async () => {
    layout('CityDemo.exe', 'CityDemo/Binaries/Win64/CityDemo.exe', 'CityDemo/Binaries/Win64/CityDemo-Win64-DebugGame.exe');
    expect(await resolveExecutable(root)).toMatchObject({ exe: join(root, 'CityDemo/Binaries/Win64/CityDemo.exe'), baseArgs: ['CityDemo'] });
  });

  it('finds a Blueprint-only build: UnrealGame with the .uproject path relative to its folder', async () => {
    layout('Oasis.exe', 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', 'Oasis/Oasis.uproject', 'Oasis/Content/Paks/Oasis-Windows.pak');
    expect(await resolveExecutable(root)).toEqual({
      exe: join(root, 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe'),
      baseArgs: ['../../../Oasis/Oasis.uproject'],
      projectName: 'Oasis',
    });
  });

  it('refuses a build with no binary, naming what it looked for', async () => {
    layout('CityDemo.exe', 'CityDemo/Content/Paks/CityDemo-Windows.pak');
    const err = await refusal();
    expect(err.code).toBe('EXECUTABLE_NOT_FOUND');
    expect(err.message).toContain('-Win64-Shipping.exe');
  });

  it('refuses an empty or missing build folder', async () => {
    expect((await refusal()).code).toBe('EXECUTABLE_NOT_FOUND');
    rmSync(root, { recursive: true });
    expect((await refusal()).code).toBe('EXECUTABLE_NOT_FOUND');
  });

  it('refuses a Blueprint-only build without its .uproject', async () => {
    layout('Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', 'Oasis/Content/Paks/Oasis-Windows.pak');
    const err = await refusal();
    expect(err.code).toBe('EXECUTABLE_NOT_FOUND');
    expect(err.message).toContain('.uproject');
  });

  it('refuses two Shipping binaries, naming both', async () => {
    layout('A/Binaries/Win64/A-Win64-Shipping.exe', 'B/Binaries/Win64/BServer-Win64-Shipping.exe');
    const err = await refusal();
    expect(err.code).toBe('AMBIGUOUS_EXECUTABLE');
    expect(err.message).toContain('A/Binaries/Win64/A-Win64-Shipping.exe');
    expect(err.message).toContain('B/Binaries/Win64/BServer-Win64-Shipping.exe');
  });

  it('refuses two Shipping targets in one project', async () => {
    layout('City/Binaries/Win64/City-Win64-Shipping.exe', 'City/Binaries/Win64/CityClient-Win64-Shipping.exe');
    expect((await refusal()).code).toBe('AMBIGUOUS_EXECUTABLE');
  });

  it('refuses a Blueprint-only build with two projects, naming both', async () => {
    layout('Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', 'A/A.uproject', 'B/B.uproject');
    const err = await refusal();
    expect(err.code).toBe('AMBIGUOUS_EXECUTABLE');
    expect(err.message).toContain('A/A.uproject');
    expect(err.message).toContain('B/B.uproject');
  });

  it('ignores a symlink posing as the binary', async () => {
    layout('elsewhere/real.exe');
    mkdirSync(join(root, 'City/Binaries/Win64'), { recursive: true });
    symlinkSync(join(root, 'elsewhere/real.exe'), join(root, 'City/Binaries/Win64/City-Win64-Shipping.exe'));
    expect((await refusal()).code).toBe('EXECUTABLE_NOT_FOUND');
  });
});
