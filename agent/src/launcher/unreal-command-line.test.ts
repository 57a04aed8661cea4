import { describe, expect, it } from 'vitest';
import { LaunchError } from './launch-error';
import { PROTECTED_LAUNCH_ARG_NAMES } from '@pixelfleet/proto';
import {
  MAX_COMMAND_LINE_CHARS,
  START_BITRATE_CAP_BPS,
  START_BITRATE_FLOOR_BPS,
  buildUnrealArgs,
  chooseStartBitrateBps,
  loopbackSignallingUrl,
  toWindowsUnrealArgs,
  validateLaunchArgs,
  windowsProgramArg,
  type UnrealArgsInput,
} from './unreal-command-line';

const typical: UnrealArgsInput = {
  projectName: 'CityDemo',
  signallingUrl: 'ws://127.0.0.1:49731',
  streamerId: 'str_8f2a',
  resX: 1920,
  resY: 1080,
  codec: 'H264',
  fps: 30,
  minBitrateBps: 100_000,
  maxBitrateBps: 40_000_000,
  logPath: 'C:\\ProgramData\\Pixelfleet\\sessions\\ses_1\\CityDemo.log',
  launchArgs: ['-AudioMixer', '-ExecCmds=t.MaxFPS=60'],
};

function launchError(fn: () => unknown): LaunchError {
  try {
    fn();
  } catch (err) {
    if (err instanceof LaunchError) return err;
    throw err;
  }
  throw new Error('expected a LaunchError');
}

describe('buildUnrealArgs', () => {
  it('builds the command line of a typical session', () => {
    expect(buildUnrealArgs(typical)).toEqual([
      'CityDemo',
      '-PixelStreamingConnectionURL=ws://127.0.0.1:49731',
      '-PixelStreamingURL=ws://127.0.0.1:49731',
      '-PixelStreamingID=str_8f2a',
      '-RenderOffScreen',
      '-ForceRes',
      '-ResX=1920',
      '-ResY=1080',
      '-Unattended',
      '-ABSLOG=C:\\ProgramData\\Pixelfleet\\sessions\\ses_1\\CityDemo.log',
      '-PixelStreamingEncoderCodec=H264',
      '-PixelStreamingWebRTCFps=30',
      '-PixelStreamingWebRTCStartBitrate=6220800',
      '-PixelStreamingWebRTCMinBitrate=100000',
      '-PixelStreamingWebRTCMaxBitrate=40000000',
      '-AudioMixer',
      '-ExecCmds=t.MaxFPS=60',
    ]);
  });

  it('gives the signalling URL under both plugins\' names (PS2 -PixelStreamingConnectionURL, legacy -PixelStreamingURL), the same value, with the streamer id', () => {
    const args = buildUnrealArgs({ ...typical, signallingUrl: 'ws://127.0.0.1:50999', streamerId: 'str_x' });
    const values = (name: string) => args.filter((a) => a.startsWith(`-${name}=`)).map((a) => a.slice(name.length + 2));
    expect(values('PixelStreamingConnectionURL')).toEqual(['ws://127.0.0.1:50999']);
    expect(values('PixelStreamingURL')).toEqual(['ws://127.0.0.1:50999']);
    expect(values('PixelStreamingID')).toEqual(['str_x']);
  });

  it('puts baseArgs first when given (Blueprint-only builds) and honours an explicit start bitrate', () => {
    const args = buildUnrealArgs({ ...typical, baseArgs: ['../../../CityDemo/CityDemo.uproject'], startBitrateBps: 2_000_000, launchArgs: [] });
    expect(args[0]).toBe('../../../CityDemo/CityDemo.uproject');
    expect(args).not.toContain('CityDemo');
    expect(args).toContain('-PixelStreamingWebRTCStartBitrate=2000000');
  });

  it('accepts a POSIX log path (stand-in apps on Linux)', () => {
    expect(buildUnrealArgs({ ...typical, logPath: '/var/lib/pixelfleet/ses_1/CityDemo.log' })).toContain('-ABSLOG=/var/lib/pixelfleet/ses_1/CityDemo.log');
  });

  const invalid: [string, Partial<UnrealArgsInput>][] = [
    ['a project name with a space', { projectName: 'City Demo' }],
    ['a project name with a path', { projectName: '../x' }],
    ['a non-ws signalling URL', { signallingUrl: 'http://127.0.0.1:1' }],
    ['a signalling URL with a space', { signallingUrl: 'ws://127.0.0.1:1 -X' }],
    ['an empty streamer id', { streamerId: '' }],
    ['a streamer id with a space', { streamerId: 'a b' }],
    ['a streamer id with a quote', { streamerId: 'a"b' }],
    ['an odd resX', { resX: 1921 }],
    ['a resY above 4096', { resY: 4098 }],
    ['a zero resX', { resX: 0 }],
    ['a fractional fps', { fps: 29.97 }],
    ['a zero fps', { fps: 0 }],
    ['a lower-case codec', { codec: 'h264' as UnrealArgsInput['codec'] }],
    ['a zero min bitrate', { minBitrateBps: 0 }],
    ['min above max', { minBitrateBps: 5_000_001, maxBitrateBps: 5_000_000 }],
    ['a start bitrate above max', { startBitrateBps: 50_000_000 }],
    ['a relative log path', { logPath: 'CityDemo.log' }],
    ['a log path not ending in .log', { logPath: '/x/CityDemo.out' }],
    ['a log path with a quote', { logPath: '/x/"a.log' }],
  ];
  for (const [what, change] of invalid) {
    it(`refuses ${what} with INVALID_SETTINGS`, () => {
      expect(launchError(() => buildUnrealArgs({ ...typical, ...change })).code).toBe('INVALID_SETTINGS');
    });
  }

  it('refuses a command line longer than Windows allows', () => {
    const launchArgs = Array.from({ length: 64 }, (_, i) => `-Arg${i}=${'v'.repeat(500)}`); // within the per-argument rule, over the whole-line cap
    const err = launchError(() => buildUnrealArgs({ ...typical, launchArgs }));
    expect(err.code).toBe('INVALID_LAUNCH_ARGS');
    expect(err.message).toContain(String(MAX_COMMAND_LINE_CHARS));
  });
});

describe('validateLaunchArgs', () => {
  it('accepts -Name and -Name=value forms, values with equals signs, commas and paths', () => {
    const ok = ['-AudioMixer', '-log', '-Res.Scale=1.5', '-ExecCmds=r.ScreenPercentage=75,t.MaxFPS=60', '-Map_2=/Game/Maps/Main', '-X=C:\\data'];
    expect(validateLaunchArgs(ok)).toEqual(ok);
  });

  const rejected: [string, unknown][] = [
    ['no leading dash', 'AudioMixer'],
    ['a double dash', '--AudioMixer'],
    ['a bare dash', '-'],
    ['a name starting with a digit', '-1Name'],
    ['a name starting with an underscore', '-_Name'],
    ['a name with a hyphen', '-Audio-Mixer'],
    ['a name with a colon (ini overrides)', '-ini:Engine:[/Script/Engine.Engine]:X=1'],
    ['a name with a space', '-Audio Mixer'],
    ['a slash form', '/AudioMixer'],
    ['an empty value', '-Name='],
    ['a double quote in the value', '-Name="x"'],
    ['a single quote in the value', "-Name=it's"],
    ['a newline in the value', '-Name=a\nb'],
    ['a carriage return in the value', '-Name=a\rb'],
    ['a NUL in the value', '-Name=a\u0000b'],
    ['a tab in the value', '-Name=a\tb'],
    ['a space in the value (the settings API refuses it too)', '-ExecCmds=r.ScreenPercentage 75'],
    ['a no-break space in the value', '-Name=a\u00a0b'],
    ['an argument over 512 characters', `-Name=${'x'.repeat(507)}`],
    ['a DEL in the value', '-Name=a\u007fb'],
    ['a trailing newline', '-AudioMixer\n'],
    ['a non-string', 42],
    ['an empty string', ''],
  ];
  for (const [what, arg] of rejected) {
    it(`refuses ${what}`, () => {
      const err = launchError(() => validateLaunchArgs(['-AudioMixer', arg]));
      expect(err.code).toBe('INVALID_LAUNCH_ARGS');
      expect(err.message).toContain('launch argument 2');
    });
  }

  for (const name of PROTECTED_LAUNCH_ARG_NAMES) {
    it(`refuses -${name} in any case and inside other names or values`, () => {
      for (const arg of [`-${name}=ws://evil:1`, `-${name}`, `-${name.toLowerCase()}=x`, `-${name.toUpperCase()}=x`, `-X${name}=x`, `-Foo=-${name}=ws://evil:1`]) {
        const err = launchError(() => validateLaunchArgs([arg]));
        expect(err.code, arg).toBe('INVALID_LAUNCH_ARGS');
        expect(err.message).toContain(name);
      }
    });
  }

  it('is applied by buildUnrealArgs', () => {
    expect(launchError(() => buildUnrealArgs({ ...typical, launchArgs: ['-PixelStreamingURL=ws://evil:1'] })).code).toBe('INVALID_LAUNCH_ARGS');
  });
});

describe('chooseStartBitrateBps', () => {
  const wide = { minBitrateBps: 100_000, maxBitrateBps: 100_000_000 };
  it('scales with the picture at 0.1 bit per pixel', () => {
    expect(chooseStartBitrateBps({ resX: 1920, resY: 1080, fps: 30, ...wide })).toBe(6_220_800);
    expect(chooseStartBitrateBps({ resX: 1280, resY: 720, fps: 30, ...wide })).toBe(2_764_800);
  });
  it('stays within the sane floor and cap', () => {
    expect(chooseStartBitrateBps({ resX: 320, resY: 240, fps: 15, ...wide })).toBe(START_BITRATE_FLOOR_BPS);
    expect(chooseStartBitrateBps({ resX: 3840, resY: 2160, fps: 60, ...wide })).toBe(START_BITRATE_CAP_BPS);
  });
  it('lets the project min and max win', () => {
    expect(chooseStartBitrateBps({ resX: 1920, resY: 1080, fps: 30, minBitrateBps: 8_000_000, maxBitrateBps: 20_000_000 })).toBe(8_000_000);
    expect(chooseStartBitrateBps({ resX: 1920, resY: 1080, fps: 30, minBitrateBps: 100_000, maxBitrateBps: 3_000_000 })).toBe(3_000_000);
  });
});

describe('loopbackSignallingUrl', () => {
  const secret = 'Q2hhbmdlZC1ldmVyeS1zZXNzaW9uLW5vdC1hLXJlYWwta2V5';
  it('uses the IPv4 loopback literal, with the session secret as the path', () => {
    expect(loopbackSignallingUrl(49731, secret)).toBe(`ws://127.0.0.1:49731/${secret}`);
  });
  it('refuses a non-port', () => {
    for (const port of [0, 65_536, 1.5, Number.NaN]) expect(launchError(() => loopbackSignallingUrl(port, secret)).code).toBe('INVALID_SETTINGS');
  });
  it('refuses a secret that is short, or not URL-safe base64', () => {
    for (const bad of ['', 'short', 'a'.repeat(31), `${secret}/..`, `${secret}?x=1`, 'a'.repeat(129)]) expect(launchError(() => loopbackSignallingUrl(49731, bad)).code).toBe('INVALID_SETTINGS');
  });
});

describe('toWindowsUnrealArgs', () => {
  it('quotes only the value of a -Name=value with spaces, as Unreal parses it', () => {
    expect(toWindowsUnrealArgs(['CityDemo', '-ABSLOG=C:\\Program Data\\ses 1\\CityDemo.log', '-RenderOffScreen', '-ExecCmds=r.A 1, r.B 2', '../../../My Proj/x.uproject'])).toEqual([
      'CityDemo',
      '-ABSLOG="C:\\Program Data\\ses 1\\CityDemo.log"',
      '-RenderOffScreen',
      '-ExecCmds="r.A 1, r.B 2"',
      '"../../../My Proj/x.uproject"',
    ]);
  });
  it('refuses a double quote and a quoted value ending in a backslash', () => {
    expect(launchError(() => toWindowsUnrealArgs(['-X=a"b'])).code).toBe('INVALID_LAUNCH_ARGS');
    expect(launchError(() => toWindowsUnrealArgs(['-X=C:\\a b\\'])).code).toBe('INVALID_LAUNCH_ARGS');
  });
  it('quotes the program path for argv[0]', () => {
    expect(windowsProgramArg('C:\\Program Files\\b\\City-Win64-Shipping.exe')).toBe('"C:\\Program Files\\b\\City-Win64-Shipping.exe"');
  });
});
