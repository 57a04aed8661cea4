import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { APP_JOB_EXIT_CODES, APP_JOB_SOURCE, APP_JOB_STDERR_PREFIX, appJobFailure, appJobSpawn } from './app-job';
import { toWindowsUnrealArgs, windowsProgramArg } from './unreal-command-line';

const LAUNCHER = 'C:\\Program Files\\Pixelfleet Agent\\native\\app-job\\app-job.exe';
const GAME = 'C:\\ProgramData\\Pixelfleet\\builds\\upl 1\\CityDemo\\Binaries\\Win64\\CityDemo-Win64-Shipping.exe';

/** The command line libuv builds from a verbatim spawn: argv0 and the arguments, joined by spaces. */
const verbatimLine = (spawn: { argv0: string | undefined; args: readonly string[] }) => [spawn.argv0, ...spawn.args].join(' ');

describe('APP_JOB_EXIT_CODES', () => {
  it("is the launcher's own list (its APP_JOB_EXIT_* defines), each code a byte", () => {
    const defines = Object.fromEntries(
      [...readFileSync(APP_JOB_SOURCE, 'utf8').matchAll(/^#define APP_JOB_EXIT_([A-Z_]+) (\d+)$/gm)].map(([, name, code]) => [
        name!.toLowerCase().replace(/_([a-z])/g, (_m, c: string) => c.toUpperCase()),
        Number(code),
      ]),
    );
    expect(defines).toEqual(APP_JOB_EXIT_CODES);
    for (const code of Object.values(APP_JOB_EXIT_CODES)) expect(code).toBeLessThan(256);
    expect(new Set(Object.values(APP_JOB_EXIT_CODES)).size).toBe(Object.keys(APP_JOB_EXIT_CODES).length);
  });
});

describe('appJobSpawn', () => {
  it("gives the app of a verbatim spawn (an Unreal build) the very command line it would get without the launcher", () => {
    const args = toWindowsUnrealArgs(['CityDemo', '-PixelStreamingURL=ws://127.0.0.1:50123', '-ABSLOG=C:\\Pixel Fleet\\sessions\\ses_1\\CityDemo.log']);
    const direct = { file: GAME, args, argv0: windowsProgramArg(GAME), windowsVerbatimArguments: true };
    const spawn = appJobSpawn(LAUNCHER, direct);
    expect(spawn).toEqual({ file: LAUNCHER, args: [`"${GAME}"`, ...args], argv0: `"${LAUNCHER}"`, windowsVerbatimArguments: true });
    expect(verbatimLine(spawn)).toBe(`"${LAUNCHER}" "${GAME}" CityDemo -PixelStreamingURL=ws://127.0.0.1:50123 -ABSLOG="C:\\Pixel Fleet\\sessions\\ses_1\\CityDemo.log"`);
    // The launcher passes on what follows its own name (app-job.wine.test.ts runs it on this line).
    expect(verbatimLine(spawn)).toBe(`"${LAUNCHER}" ${verbatimLine(direct)}`);
  });

  it('puts --account <name> before the app command line, in either spawn form, and leaves the app line as it was', () => {
    const args = toWindowsUnrealArgs(['CityDemo', '-ResX=1920']);
    const direct = { file: GAME, args, argv0: windowsProgramArg(GAME), windowsVerbatimArguments: true };
    const spawn = appJobSpawn(LAUNCHER, direct, 'pixelfleet-app-3');
    expect(verbatimLine(spawn)).toBe(`"${LAUNCHER}" --account pixelfleet-app-3 ${verbatimLine(direct)}`);
    const plain = appJobSpawn(LAUNCHER, { file: 'node', args: ['mock.mjs'], argv0: undefined, windowsVerbatimArguments: false }, 'pixelfleet-app-3');
    expect(plain.args).toEqual(['--account', 'pixelfleet-app-3', 'node', 'mock.mjs']);
  });

  it('quotes the program of a verbatim spawn that gave no argv0', () => {
    expect(appJobSpawn(LAUNCHER, { file: GAME, args: ['-x'], argv0: undefined, windowsVerbatimArguments: true }).args).toEqual([`"${GAME}"`, '-x']);
  });

  it('hands the program and arguments of a plain spawn (launcher.command) to libuv to quote, program first', () => {
    const direct = { file: 'node', args: ['C:\\Pixel Fleet\\mock-unreal.mjs', '-ResX=1280'], argv0: undefined, windowsVerbatimArguments: false };
    expect(appJobSpawn(LAUNCHER, direct)).toEqual({ file: LAUNCHER, args: ['node', 'C:\\Pixel Fleet\\mock-unreal.mjs', '-ResX=1280'], argv0: undefined, windowsVerbatimArguments: false });
    expect(appJobSpawn(LAUNCHER, { ...direct, argv0: 'nodejs' }).args[0]).toBe('nodejs');
  });

  it('refuses a launcher path with a double quote (it could not be one token)', () => {
    expect(() => appJobSpawn('C:\\a"b\\app-job.exe', { file: GAME, args: [], argv0: undefined, windowsVerbatimArguments: true })).toThrow(
      expect.objectContaining({ name: 'LaunchError', code: 'INVALID_SETTINGS' }) as Error,
    );
  });
});

describe('appJobFailure', () => {
  const line = `${APP_JOB_STDERR_PREFIX}cannot start the app: File not found (Windows error 2)`;
  const err = (text: string) => ({ stream: 'stderr' as const, text });
  const out = (text: string) => ({ stream: 'stdout' as const, text });

  it("returns the launcher's line for one of its codes with its line last on stderr", () => {
    expect(appJobFailure(APP_JOB_EXIT_CODES.launch, [out('x'), err(line), out('y')])).toBe(line);
    expect(appJobFailure(APP_JOB_EXIT_CODES.usage, [err('app-job: no app command line given (usage: app-job.exe [--account <name>] <app command line>)')])).toBe(
      'app-job: no app command line given (usage: app-job.exe [--account <name>] <app command line>)',
    );
  });

  it("is the app's exit otherwise: another code, no line, the line on stdout, or the app's stderr after it", () => {
    expect(appJobFailure(1, [err(line)])).toBeUndefined();
    expect(appJobFailure(null, [err(line)])).toBeUndefined();
    expect(appJobFailure(APP_JOB_EXIT_CODES.launch, [])).toBeUndefined();
    expect(appJobFailure(APP_JOB_EXIT_CODES.launch, [out(line)])).toBeUndefined();
    expect(appJobFailure(APP_JOB_EXIT_CODES.launch, [err(line), err('Fatal error!')])).toBeUndefined();
  });
});
