// Unreal-style command-line parsing and the failure-mode switches (environment or flags).
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseCommandLine } from './command-line';
import { DEFAULT_FIXTURE_PATH } from './fixture';

const CWD = '/srv/mock';
const REAL = [
  'MyProject', '-PixelStreamingConnectionURL=ws://127.0.0.1:8888', '-PixelStreamingURL=ws://127.0.0.1:8888', '-PixelStreamingID=stream-1', '-RenderOffScreen', '-ForceRes',
  '-ResX=1280', '-ResY=720', '-Unattended', '-ABSLOG=/var/log/ue/MyProject.log', '-PixelStreamingEncoderCodec=H264',
  '-PixelStreamingWebRTCFps=30', '-PixelStreamingWebRTCStartBitrate=2000000', '-PixelStreamingWebRTCMinBitrate=500000',
  '-PixelStreamingWebRTCMaxBitrate=8000000',
];

describe('parseCommandLine', () => {
  it('reads the command line the agent launches Unreal with, with no warnings', () => {
    const config = parseCommandLine(REAL, {}, CWD);
    expect(config).toMatchObject({
      projectName: 'MyProject',
      signallingUrl: 'ws://127.0.0.1:8888',
      streamerId: 'stream-1',
      resX: 1280,
      resY: 720,
      logPath: '/var/log/ue/MyProject.log',
      fps: 30,
      startBitrate: 2_000_000,
      minBitrate: 500_000,
      maxBitrate: 8_000_000,
      stdout: false,
      allowPixelStreamingCommands: false,
      keepAliveIntervalMs: 30_000,
      icePortRange: undefined,
      fixturePath: DEFAULT_FIXTURE_PATH,
      failure: { crashAfterMs: undefined, hangOnStop: false, neverConnect: false, exitEarly: false, kickOnUIInteraction: false, reconnectSignalling: false, helperProcess: false, signallingGate: undefined },
      notes: [],
    });
    expect(config.commandLine).toBe(REAL.join(' '));
    expect(Object.isFrozen(config)).toBe(true);
  });

  it('matches keys case-insensitively and strips quotes, like FParse', () => {
    const config = parseCommandLine(['-pixelstreamingurl="ws://h:1"', '-PIXELSTREAMINGID=x', '-abslog="/tmp/a b.log"', '-STDOUT'], {}, CWD);
    expect(config).toMatchObject({ signallingUrl: 'ws://h:1', streamerId: 'x', logPath: '/tmp/a b.log', stdout: true, notes: [] });
  });

  it('takes the first bare word as the project name even after wrapper flags', () => {
    expect(parseCommandLine(['-MockCrashAfterMs=500', 'CityDemo', '-PixelStreamingID=s'], {}, CWD)).toMatchObject({ projectName: 'CityDemo', notes: [] });
  });

  it('applies Unreal and PS2 defaults', () => {
    const config = parseCommandLine([], {}, CWD);
    expect(config).toMatchObject({
      projectName: 'MockUnreal',
      signallingUrl: undefined,
      streamerId: 'DefaultStreamer',
      fps: 60,
      startBitrate: 1_000_000,
      minBitrate: 100_000,
      maxBitrate: 40_000_000,
      logPath: join(CWD, 'MockUnreal', 'Saved', 'Logs', 'MockUnreal.log'),
      savedDir: join(CWD, 'MockUnreal', 'Saved'),
      savedLogName: undefined,
    });
  });

  it('finds Saved beside the binary\'s folder when started in <Project>/Binaries/<Platform> (as the agent starts a build), and takes -MockSavedLog', () => {
    const config = parseCommandLine(['Game', '-MockSavedLog=Plugin.log'], {}, '/builds/upl_1/Game/Binaries/Linux');
    expect(config).toMatchObject({ savedDir: '/builds/upl_1/Game/Saved', logPath: '/builds/upl_1/Game/Saved/Logs/Game.log', savedLogName: 'Plugin.log', notes: [] });
    expect(parseCommandLine(['Game', '-MockSavedLog=../x.log'], {}, CWD)).toMatchObject({ savedLogName: undefined, notes: ['Ignoring -MockSavedLog="../x.log": expected a plain file name ending in .log'] });
  });

  it('takes the signalling URL from any PS1/PS2 spelling, the legacy -PixelStreamingURL winning', () => {
    const url = (...args: string[]): string | undefined => parseCommandLine(args, {}, CWD).signallingUrl;
    expect(url('-PixelStreamingConnectionURL=ws://a:1')).toBe('ws://a:1');
    expect(url('-PixelStreamingSignallingURL=wss://b:2')).toBe('wss://b:2');
    expect(url('-PixelStreamingIP=10.0.0.5', '-PixelStreamingPort=9999')).toBe('ws://10.0.0.5:9999');
    expect(url('-PixelStreamingIP=10.0.0.5')).toBe('ws://10.0.0.5:8888');
    expect(url('-PixelStreamingConnectionURL=ws://a:1', '-PixelStreamingURL=ws://c:3')).toBe('ws://c:3');
    expect(url('-PixelStreamingURL=ws://c:3', '-PixelStreamingConnectionURL=ws://a:1')).toBe('ws://c:3');
    expect(url('-PixelStreamingConnectionURL=ws://a:1', '-PixelStreamingSignallingURL=ws://b:2')).toBe('ws://a:1');
    expect(url('-PixelStreamingURL=http://nope')).toBeUndefined();
  });

  it('logs unknown and invalid arguments instead of failing, keeping defaults', () => {
    const config = parseCommandLine(['P', 'extra', '-PixelStreamingFoo=1', '-Bogus', '-ResX=wide', '-PixelStreamingEncoderCodec=VP8', '-PixelStreamingID'], {}, CWD);
    expect(config.resX).toBe(1280);
    expect(config.notes).toEqual([
      'Ignoring unknown argument "extra"',
      'Unknown Pixel Streaming argument "-PixelStreamingFoo=1" ignored',
      'Ignoring unknown argument "-Bogus"',
      'Ignoring "-PixelStreamingID": it needs a value (-PixelStreamingID=...)',
      '-PixelStreamingEncoderCodec=VP8 requested, but the mock streams only H264',
      'Ignoring -ResX="wide": expected an integer >= 1',
    ]);
  });

  it('reads the ICE port range, keep-alive interval, commands flag, relative ABSLOG and fixture', () => {
    const config = parseCommandLine([
      '-PixelStreamingWebRTCMinPort=40000', '-PixelStreamingWebRTCMaxPort=40100', '-PixelStreamingSignalingKeepAliveInterval=0',
      '-AllowPixelStreamingCommands', '-ABSLOG=logs/x.log', '-MockFixture=clips/other.h264',
    ], {}, CWD);
    expect(config).toMatchObject({
      icePortRange: [40000, 40100],
      keepAliveIntervalMs: 0,
      allowPixelStreamingCommands: true,
      logPath: '/srv/mock/logs/x.log',
      fixturePath: '/srv/mock/clips/other.h264',
    });
  });

  it('turns each failure mode on from the environment', () => {
    const config = parseCommandLine([], {
      MOCK_UNREAL_CRASH_AFTER_MS: '300',
      MOCK_UNREAL_HANG_ON_STOP: '1',
      MOCK_UNREAL_NEVER_CONNECT: 'true',
      MOCK_UNREAL_EXIT_EARLY: 'yes',
      MOCK_UNREAL_KICK_ON_UI_INTERACTION: 'on',
      MOCK_UNREAL_RECONNECT_SIGNALLING: '1',
      MOCK_UNREAL_HELPER_PROCESS: 'true',
      MOCK_UNREAL_SIGNALLING_GATE: 'gate',
      MOCK_UNREAL_CRASH_REPORT: '1',
    }, CWD);
    expect(config.failure).toEqual({ crashAfterMs: 300, hangOnStop: true, neverConnect: true, exitEarly: true, kickOnUIInteraction: true, reconnectSignalling: true, helperProcess: true, signallingGate: join(CWD, 'gate'), crashReport: true });
  });

  it('turns each failure mode on from the command line, which wins for the crash delay', () => {
    const config = parseCommandLine(['-MockCrashAfterMs=50', '-MockHangOnStop', '-mockneverconnect', '-MockExitEarly=1', '-MockKickOnUIInteraction', '-MockReconnectSignalling', '-MockHelperProcess', '-MockSignallingGate=/tmp/gate', '-MockCrashReport'], { MOCK_UNREAL_CRASH_AFTER_MS: '999' }, CWD);
    expect(config.failure).toEqual({ crashAfterMs: 50, hangOnStop: true, neverConnect: true, exitEarly: true, kickOnUIInteraction: true, reconnectSignalling: true, helperProcess: true, signallingGate: '/tmp/gate', crashReport: true });
  });

  it('takes a realistic start from -MockStartupSeconds, or from its variable, and none for 0 or nonsense', () => {
    expect(parseCommandLine(['-MockStartupSeconds=10'], {}, CWD).startupSeconds).toBe(10);
    expect(parseCommandLine(['-mockstartupseconds=2.5'], { MOCK_UNREAL_STARTUP_SECONDS: '30' }, CWD).startupSeconds).toBe(2.5);
    expect(parseCommandLine([], { MOCK_UNREAL_STARTUP_SECONDS: '30' }, CWD).startupSeconds).toBe(30);
    expect(parseCommandLine(['-MockStartupSeconds=0'], {}, CWD).startupSeconds).toBeUndefined();
    const nonsense = parseCommandLine(['-MockStartupSeconds=soon'], {}, CWD);
    expect(nonsense.startupSeconds).toBeUndefined();
    expect(nonsense.notes).toEqual(['Ignoring -MockStartupSeconds="soon": expected a number >= 0']);
    expect(parseCommandLine([], {}, CWD).startupSeconds).toBeUndefined();
  });

  it('leaves failure modes off for 0/false/empty and reports nonsense', () => {
    const config = parseCommandLine(['-MockHangOnStop=0', '-MockKickOnUIInteraction=false'], { MOCK_UNREAL_NEVER_CONNECT: '0', MOCK_UNREAL_EXIT_EARLY: '', MOCK_UNREAL_CRASH_AFTER_MS: 'soon' }, CWD);
    expect(config.failure).toEqual({ crashAfterMs: undefined, hangOnStop: false, neverConnect: false, exitEarly: false, kickOnUIInteraction: false, reconnectSignalling: false, helperProcess: false, signallingGate: undefined, crashReport: false });
    expect(config.notes).toEqual(['Ignoring MOCK_UNREAL_CRASH_AFTER_MS="soon": expected an integer >= 0']);
  });
});
