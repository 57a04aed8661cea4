import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, win32 } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LaunchError } from './launch-error';
import { APP_OUTPUT_LOG, appEnvironment, launchSession, planLaunch, type LaunchBuild, type LaunchPlanInput } from './launcher';
import { windowsProcessControl } from './process-control';

let root: string;
let buildDir: string;
/** A file standing in for app-job.exe (planLaunch only checks that it is there). */
let jobLauncher: string;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'pixelfleet-launch-'));
  buildDir = join(root, 'builds', 'upl_1');
  jobLauncher = join(root, 'agent', 'app-job.exe');
  mkdirSync(dirname(jobLauncher));
  writeFileSync(jobLauncher, 'MZ');
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

function layout(...files: string[]): void {
  for (const f of files) {
    mkdirSync(dirname(join(buildDir, f)), { recursive: true });
    writeFileSync(join(buildDir, f), 'MZ');
  }
}

const settings: LaunchPlanInput['settings'] = { codec: 'VP8', minBitrateBps: 1_000_000, maxBitrateBps: 20_000_000, resX: 1280, resY: 720, fps: 60, launchArgs: ['-AudioMixer'] };

/** A cached build as the archive's scan described it (build-archive's manifest). */
const build = (manifest: Partial<LaunchBuild['manifest']> = {}): LaunchBuild => ({
  dir: buildDir,
  manifest: { platform: 'windows', projectName: 'CityDemo', executable: 'CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe', baseArgs: ['CityDemo'], ...manifest },
});

/** A session's signalling secret (43 URL-safe base64 characters, as SessionRuntime makes them). */
const SECRET = 'c2Vzc2lvbi1zZWNyZXQtZm9yLWEtbGF1bmNoLXRlc3Qtb25seQ';

const input = (over: Partial<LaunchPlanInput> = {}): LaunchPlanInput => ({
  command: ['node', 'test/mock-unreal/bin/mock-unreal.mjs'],
  build: build(),
  projectName: 'Display Name',
  settings,
  sessionDir: join(root, 'sessions', 'ses_1'),
  signallingPort: 50_123,
  signallingSecret: SECRET,
  streamerId: 'str_1',
  platform: 'linux',
  jobLauncher,
  ...over,
});

async function refusal(promise: Promise<unknown>): Promise<LaunchError> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err instanceof LaunchError) return err;
  throw new Error(`expected a LaunchError, got ${String(err)}`);
}

describe('planLaunch', () => {
  it('runs launcher.command with the arguments the build binary would get (Linux)', async () => {
    layout('CityDemo.exe', 'CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe');
    const plan = await planLaunch(input());
    const sessionDir = join(root, 'sessions', 'ses_1');
    expect(plan).toMatchObject({
      command: ['node', 'test/mock-unreal/bin/mock-unreal.mjs'],
      cwd: undefined,
      argv0: undefined,
      windowsVerbatimArguments: false,
      projectName: 'CityDemo',
      logPath: join(sessionDir, 'CityDemo.log'),
      outputLogPath: join(sessionDir, APP_OUTPUT_LOG),
    });
    expect(plan.args).toEqual([
      'CityDemo',
      `-PixelStreamingConnectionURL=ws://127.0.0.1:50123/${SECRET}`,
      `-PixelStreamingURL=ws://127.0.0.1:50123/${SECRET}`,
      '-PixelStreamingID=str_1',
      '-RenderOffScreen',
      '-ForceRes',
      '-ResX=1280',
      '-ResY=720',
      '-Unattended',
      `-ABSLOG=${join(sessionDir, 'CityDemo.log')}`,
      '-PixelStreamingEncoderCodec=VP8',
      '-PixelStreamingWebRTCFps=60',
      '-PixelStreamingWebRTCStartBitrate=5529600',
      '-PixelStreamingWebRTCMinBitrate=1000000',
      '-PixelStreamingWebRTCMaxBitrate=20000000',
      '-AudioMixer',
    ]);
  });

  it('runs the Shipping binary itself on Windows, from its folder, with Unreal-style quoting', async () => {
    layout('CityDemo.exe', 'CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe');
    const exe = join(buildDir, 'CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe');
    const plan = await planLaunch(input({ command: undefined, platform: 'win32', sessionDir: 'C:\\Pixel Fleet\\sessions\\ses_1' }));
    expect(plan).toMatchObject({
      command: [exe],
      cwd: dirname(exe),
      argv0: `"${exe}"`,
      windowsVerbatimArguments: true,
      jobLauncher,
      logPath: 'C:\\Pixel Fleet\\sessions\\ses_1\\CityDemo.log',
      outputLogPath: 'C:\\Pixel Fleet\\sessions\\ses_1\\app-output.log',
    });
    expect(plan.args[0]).toBe('CityDemo');
    expect(plan.args).toContain('-ABSLOG="C:\\Pixel Fleet\\sessions\\ses_1\\CityDemo.log"');
  });

  it('runs every app under the app-job launcher on Windows, a stand-in too, and none elsewhere', async () => {
    layout('CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe');
    expect((await planLaunch(input({ platform: 'win32' }))).jobLauncher).toBe(jobLauncher);
    expect((await planLaunch(input({ command: undefined, platform: 'win32' }))).jobLauncher).toBe(jobLauncher);
    expect((await planLaunch(input())).jobLauncher).toBeUndefined();
  });

  it('refuses to start a Windows app without the app-job launcher, and names the command that builds it', async () => {
    layout('CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe');
    const missing = join(root, 'nowhere', 'app-job.exe');
    const refused = await refusal(planLaunch(input({ command: undefined, platform: 'win32', jobLauncher: missing })));
    expect([refused.code, refused.message]).toEqual(['NO_APP_JOB', `the app-job launcher is missing (${missing}): extract the whole agent zip into the install folder (from sources: npm run build:app-job)`]);
    expect((await refusal(planLaunch(input({ platform: 'win32', jobLauncher: root })))).code).toBe('NO_APP_JOB');
    // Off Windows it is never looked for.
    expect((await planLaunch(input({ jobLauncher: missing }))).jobLauncher).toBeUndefined();
  });

  it('passes the .uproject base argument of a Blueprint-only build', async () => {
    layout('Oasis.exe', 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', 'Oasis/Oasis.uproject');
    const blueprint = build({ projectName: 'Oasis', executable: 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe', baseArgs: ['../../../Oasis/Oasis.uproject'] });
    const plan = await planLaunch(input({ command: undefined, build: blueprint, platform: 'win32', sessionDir: 'C:\\s\\ses_1' }));
    expect(plan.command).toEqual([join(buildDir, 'Engine/Binaries/Win64/UnrealGame-Win64-Shipping.exe')]);
    expect(plan.args.slice(0, 3)).toEqual(['../../../Oasis/Oasis.uproject', `-PixelStreamingConnectionURL=ws://127.0.0.1:50123/${SECRET}`, `-PixelStreamingURL=ws://127.0.0.1:50123/${SECRET}`]);
    expect(plan.logPath).toBe('C:\\s\\ses_1\\Oasis.log');
  });

  it('uses the given project name when a command runs without a build', async () => {
    const plan = await planLaunch(input({ build: undefined, projectName: 'MockProject' }));
    expect(plan.args[0]).toBe('MockProject');
    expect(plan.executable).toBeUndefined();
  });

  it('refuses to run a Windows build off Windows, and a Linux build off Linux, without launcher.command', async () => {
    layout('CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe', 'CityDemo/Binaries/Linux/CityDemo-Linux-Shipping');
    const windowsOffWindows = await refusal(planLaunch(input({ command: undefined })));
    expect([windowsOffWindows.code, windowsOffWindows.message]).toEqual(['NO_LAUNCH_COMMAND', 'a Windows build cannot run on linux; set launcher.command to run a stand-in']);
    const linux = build({ platform: 'linux', executable: 'CityDemo/Binaries/Linux/CityDemo-Linux-Shipping' });
    const linuxOnWindows = await refusal(planLaunch(input({ command: undefined, build: linux, platform: 'win32' })));
    expect([linuxOnWindows.code, linuxOnWindows.message]).toEqual(['NO_LAUNCH_COMMAND', 'a Linux build cannot run on win32; set launcher.command to run a stand-in']);
  });

  it("runs a Linux build's binary itself on Linux, from its folder, with plain arguments", async () => {
    layout('CityDemo.sh', 'CityDemo/Binaries/Linux/CityDemo-Linux-Shipping');
    const exe = join(buildDir, 'CityDemo/Binaries/Linux/CityDemo-Linux-Shipping');
    const plan = await planLaunch(input({ command: undefined, build: build({ platform: 'linux', executable: 'CityDemo/Binaries/Linux/CityDemo-Linux-Shipping' }) }));
    expect(plan).toMatchObject({ command: [exe], cwd: dirname(exe), argv0: undefined, windowsVerbatimArguments: false, projectName: 'CityDemo' });
    expect(plan.args[0]).toBe('CityDemo');
    expect(plan.args).toContain(`-ABSLOG=${join(root, 'sessions', 'ses_1', 'CityDemo.log')}`);
  });

  it('refuses an empty launcher.command, and neither build nor command', async () => {
    expect((await refusal(planLaunch(input({ command: [], build: undefined, projectName: 'P' })))).code).toBe('NO_LAUNCH_COMMAND');
    expect((await refusal(planLaunch(input({ command: undefined, build: undefined, platform: 'win32' })))).code).toBe('NO_LAUNCH_COMMAND');
  });

  it("checks the build's binary is there even when a command stands in for it", async () => {
    layout('CityDemo/Content/Paks/CityDemo-Windows.pak');
    const missing = await refusal(planLaunch(input()));
    expect([missing.code, missing.message]).toEqual(['EXECUTABLE_NOT_FOUND', "the build's binary CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe is missing from its folder"]);
  });

  it('refuses bad launch arguments and settings', async () => {
    layout('CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe');
    expect((await refusal(planLaunch(input({ settings: { ...settings, launchArgs: ['-ABSLOG=C:\\x.log'] } })))).code).toBe('INVALID_LAUNCH_ARGS');
    expect((await refusal(planLaunch(input({ settings: { ...settings, resX: 1281 } })))).code).toBe('INVALID_SETTINGS');
    expect((await refusal(planLaunch(input({ build: undefined, projectName: 'Display Name' })))).code).toBe('INVALID_SETTINGS');
  });
});

describe('launchSession', () => {
  it('creates the session folder and runs the app with the session arguments and environment', async () => {
    layout('CityDemo/Binaries/Win64/CityDemo-Win64-Shipping.exe');
    // A stand-in app: writes its engine log where -ABSLOG says, prints its argv and one variable.
    const app = `
      const args = process.argv.slice(1);
      const abslog = args.find((a) => a.startsWith('-ABSLOG=')).slice('-ABSLOG='.length);
      require('node:fs').writeFileSync(abslog, 'LogInit: Display: engine started\\n');
      console.log(JSON.stringify({ args, joinToken: process.env.PIXELFLEET_AGENT_JOIN_TOKEN ?? null, marker: process.env.APP_MARKER }));`;
    const env = appEnvironment({ ...process.env, PIXELFLEET_AGENT_JOIN_TOKEN: 'secret-join-token-123', APP_MARKER: 'm1' });
    const launched = await launchSession({
      ...input({ command: [process.execPath, '-e', app, '--'] }),
      sessionId: 'ses_1',
      env,
      log: pino({ level: 'silent' }),
    });
    const exit = await launched.process.whenExited();
    expect(exit).toMatchObject({ code: 0, expected: false });
    const printed = JSON.parse(exit.lastLines[0]!.text) as { args: string[]; joinToken: string | null; marker: string };
    expect(printed.args).toEqual(launched.plan.args);
    expect(printed.joinToken).toBeNull();
    expect(printed.marker).toBe('m1');
    expect(launched.logPath).toBe(join(root, 'sessions', 'ses_1', 'CityDemo.log'));
    expect(readFileSync(launched.logPath, 'utf8')).toContain('engine started');
    expect(readFileSync(launched.outputLogPath, 'utf8')).toContain('"marker":"m1"');
  });

  it('on Windows, runs the app through the job launcher as its account, with its profile, app data and temp folders in its session folder', async () => {
    // The job launcher's contract on the command line (app-job.wine.test.ts runs the real one): `--account <name>`, then the app's.
    chmodSync(jobLauncher, 0o755);
    writeFileSync(jobLauncher, '#!/bin/sh\n[ "$1" = --account ] || exit 99\necho "account $2"\nshift 2\nexec "$@"\n');
    const app = `console.log(JSON.stringify(['USERPROFILE', 'APPDATA', 'LOCALAPPDATA', 'TEMP', 'TMP', 'HOME'].map((n) => process.env[n] ?? null)))`;
    const sessionDir = join(root, 'sessions', 'ses_1');
    const launched = await launchSession({
      ...input({ command: [process.execPath, '-e', app, '--'], build: undefined, projectName: 'CityDemo', platform: 'win32', sessionDir }),
      sessionId: 'ses_1',
      env: { PATH: process.env.PATH },
      account: { kind: 'windows', name: 'pixelfleet-app-2' },
      control: windowsProcessControl(() => Promise.resolve('')),
      log: pino({ level: 'silent' }),
    });
    const exit = await launched.process.whenExited();
    // The plan joins Windows paths: on this Linux host the output log is one file whose name has
    // backslashes, in the working folder. Removed, so that a run leaves nothing in the clone.
    expect(launched.outputLogPath).toBe(win32.join(sessionDir, APP_OUTPUT_LOG));
    rmSync(launched.outputLogPath, { force: true });
    expect(exit.code).toBe(0);
    expect(exit.lastLines.map((l) => l.text)).toEqual([
      'account pixelfleet-app-2',
      JSON.stringify([join(sessionDir, 'home'), join(sessionDir, 'home', 'AppData', 'Roaming'), join(sessionDir, 'home', 'AppData', 'Local'), join(sessionDir, 'temp'), join(sessionDir, 'temp'), null]),
    ]);
    for (const folder of ['home/AppData/Roaming', 'home/AppData/Local', 'temp']) expect(existsSync(join(sessionDir, folder))).toBe(true);
  });

  it('does not create the session folder when the launch is refused', async () => {
    await refusal(launchSession({ ...input({ command: undefined }), sessionId: 'ses_1', env: {}, log: pino({ level: 'silent' }) }));
    expect(existsSync(join(root, 'sessions'))).toBe(false);
  });
});

describe('appEnvironment', () => {
  it('drops PIXELFLEET_* variables in any case and undefined values', () => {
    expect(appEnvironment({ PATH: '/bin', PIXELFLEET_AGENT_JOIN_TOKEN: 't', pixelfleet_agent_region: 'x', Pixelfleet_X: 'y', SystemRoot: 'C:\\Windows', EMPTY: undefined })).toEqual({
      PATH: '/bin',
      SystemRoot: 'C:\\Windows',
    });
  });
});
