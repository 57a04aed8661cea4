import { describe, expect, it } from 'vitest';
import { ArchiveRejection } from './archive-rejection';
import { type ArchiveEntry } from './entry-guards';
import { findUnrealLayout } from './unreal-layout';

function entries(...paths: string[]): ArchiveEntry[] {
  return paths.map((p) => {
    const executable = p.endsWith('*');
    const path = executable ? p.slice(0, -1) : p;
    return { path, isDirectory: false, uncompressedSize: 1, compressedSize: 1, crc32: 0, mode: executable ? 0o755 : 0o644, executable };
  });
}

function objection(list: ArchiveEntry[]): string {
  try {
    findUnrealLayout(list);
  } catch (err) {
    if (err instanceof ArchiveRejection && err.code === 'NOT_AN_UNREAL_BUILD') return err.objection;
    throw err;
  }
  throw new Error('expected a rejection');
}

const PAK = 'Game/Content/Paks/Game-Windows.pak';

describe('findUnrealLayout', () => {
  it('finds a Windows Shipping build, matching folder names case-insensitively', () => {
    expect(findUnrealLayout(entries('Game.exe', 'Game/binaries/WIN64/Game-Win64-Shipping.exe', 'Game/content/paks/Game-Windows.pak', 'Engine/Binaries/Win64/CrashReportClient.exe'))).toEqual({
      platform: 'windows',
      projectName: 'Game',
      executable: 'Game/binaries/WIN64/Game-Win64-Shipping.exe',
      baseArgs: ['Game'],
    });
  });

  it('prefers the Shipping binary to a Development one, and takes a Development one alone', () => {
    expect(findUnrealLayout(entries('Game.exe', 'Game/Binaries/Win64/Game.exe', 'Game/Binaries/Win64/Game-Win64-Shipping.exe', PAK)).executable).toBe('Game/Binaries/Win64/Game-Win64-Shipping.exe');
    expect(findUnrealLayout(entries('Game.exe', 'Game/Binaries/Win64/Game.exe', PAK)).executable).toBe('Game/Binaries/Win64/Game.exe');
    // A Debug/Test binary carries a -Win64- suffix: it is neither.
    expect(objection(entries('Game.exe', 'Game/Binaries/Win64/Game-Win64-DebugGame.exe', PAK))).toMatch(/^the archive has no Unreal executable: /);
  });

  it('finds a Blueprint-only build: the engine binary with the one .uproject', () => {
    expect(findUnrealLayout(entries('Game.exe', 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', 'Game/Game.uproject', PAK))).toEqual({
      platform: 'windows',
      projectName: 'Game',
      executable: 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe',
      baseArgs: ['../../../Game/Game.uproject'],
    });
    expect(objection(entries('Game.exe', 'Engine/Binaries/Win64/UnrealGame.exe', PAK))).toBe('the archive has "Engine/Binaries/Win64/UnrealGame.exe" but no <Project>/<Project>.uproject');
    expect(objection(entries('Game.exe', 'Engine/Binaries/Win64/UnrealGame.exe', 'A/A.uproject', 'B/B.uproject'))).toBe(
      'the Blueprint-only build holds 2 projects, "A/A.uproject" and "B/B.uproject": it must hold exactly one',
    );
  });

  it('finds a Linux build whose binary is executable', () => {
    expect(findUnrealLayout(entries('Game.sh*', 'Game/Binaries/Linux/Game-Linux-Shipping*', 'Game/Content/Paks/Game-Linux.pak'))).toEqual({
      platform: 'linux',
      projectName: 'Game',
      executable: 'Game/Binaries/Linux/Game-Linux-Shipping',
      baseArgs: ['Game'],
    });
    expect(objection(entries('Game.sh', 'Game/Binaries/Linux/Game-Linux-Shipping', 'Game/Content/Paks/Game-Linux.pak'))).toBe(
      '"Game/Binaries/Linux/Game-Linux-Shipping" is not marked executable in the archive: zip the build on Linux so that file permissions are kept',
    );
    expect(objection(entries('Game/Binaries/Linux/Game-Linux-Shipping*', 'Game/Content/Paks/Game-Linux.pak'))).toBe('the archive has "Game/Binaries/Linux/Game-Linux-Shipping" but no <Name>.sh at the root');
  });

  it('names what is missing', () => {
    expect(objection(entries('readme.txt'))).toBe(
      'the archive has no Unreal executable: expected <Name>.exe at the root and <Project>/Binaries/Win64/<Project>-Win64-Shipping.exe, or <Name>.sh at the root and <Project>/Binaries/Linux/<Project>-Linux-Shipping',
    );
    expect(objection(entries('Game/Binaries/Win64/Game-Win64-Shipping.exe', PAK))).toBe('the archive has "Game/Binaries/Win64/Game-Win64-Shipping.exe" but no <Name>.exe at the root');
    expect(objection(entries('Game.exe', 'Game/Binaries/Win64/Game-Win64-Shipping.exe', 'Other/Content/Paks/x.pak', 'Game/Content/Paks/readme.txt'))).toBe(
      'the archive has no Game/Content/Paks/*.pak: the packaged content is missing',
    );
    expect(objection(entries('Windows/Game.exe', 'Windows/Game/Binaries/Win64/Game-Win64-Shipping.exe'))).toBe(
      'the archive has no Unreal executable at its root: everything is inside the folder "Windows/"; zip that folder\'s contents instead',
    );
  });

  it('refuses two candidates, naming both', () => {
    expect(objection(entries('Game.exe', 'Game/Binaries/Win64/Game-Win64-Shipping.exe', 'Game/Binaries/Win64/Server-Win64-Shipping.exe', PAK))).toBe(
      'the archive holds 2 Shipping executables, "Game/Binaries/Win64/Game-Win64-Shipping.exe" and "Game/Binaries/Win64/Server-Win64-Shipping.exe": it must hold exactly one',
    );
    expect(objection(entries('Game.exe', 'Game/Binaries/Win64/Game-Win64-Shipping.exe', 'Game.sh*', 'Game/Binaries/Linux/Game-Linux-Shipping*', PAK))).toBe(
      'the archive holds both a Windows build ("Game/Binaries/Win64/Game-Win64-Shipping.exe") and a Linux build ("Game/Binaries/Linux/Game-Linux-Shipping"): upload one',
    );
  });

  it('never takes an engine or nested binary for the project binary', () => {
    expect(objection(entries('Game.exe', 'Engine/Binaries/Win64/Engine-Win64-Shipping.exe', 'Game/Plugins/X/Binaries/Win64/X-Win64-Shipping.exe', PAK))).toMatch(
      /^the archive has no Unreal executable: /,
    );
  });
});
