// The mock Unreal app's configuration, parsed once from an Unreal-style command line
// (`<Project> -Key=Value -Flag`, keys case-insensitive, unknown ones noted but never fatal) and
// the MOCK_UNREAL_* failure-mode variables. Returns a frozen config plus notes for the log.
import { basename, dirname, isAbsolute, join, resolve } from 'node:path';
import { DEFAULT_FIXTURE_PATH } from './fixture';

export interface MockFailureModes {
  /** Exit abruptly with code 3 this many ms after process start. */
  readonly crashAfterMs: number | undefined;
  /** Ignore SIGTERM and SIGINT: only SIGKILL ends the process. */
  readonly hangOnStop: boolean;
  /** Start and log, but never dial the signalling server. */
  readonly neverConnect: boolean;
  /** Exit with code 1 right after start, before connecting. */
  readonly exitEarly: boolean;
  /**
   * A UIInteraction `{"kick": "<reason>"}` from a player makes the app send `disconnectPlayer` for
   * it (with that reason; none for a missing or empty one), as a game kicking a player would.
   */
  readonly kickOnUIInteraction: boolean;
  /**
   * Outlive the signalling socket as a real build does: when it closes, end the players it
   * carried and re-dial every RECONNECT_INTERVAL_MS, instead of exiting.
   */
  readonly reconnectSignalling: boolean;
  /** Start a helper child process (as a real build starts CrashReportClient) in the app's process group; it lives until killed. */
  readonly helperProcess: boolean;
  /**
   * Dial the signalling server only once this file exists (absolute path): a test holds the app's
   * start at a known point (launched, not yet identified) and lets it go when it chooses.
   */
  readonly signallingGate: string | undefined;
  /** A crash also writes a crash folder `Saved/Crashes/UECC-<Platform>-<GUID>_0000/` (context, log copy, minidump), as the crash reporter does. */
  readonly crashReport: boolean;
}

export interface MockUnrealConfig {
  readonly projectName: string;
  /** The arguments as given, joined with spaces, for the `LogInit: Command Line:` line. */
  readonly commandLine: string;
  /** ws:// or wss:// URL of the signalling server; undefined = none given (PS2 then never connects). */
  readonly signallingUrl: string | undefined;
  readonly streamerId: string;
  readonly resX: number;
  readonly resY: number;
  /** Absolute path of the log file (-ABSLOG, else <savedDir>/Logs/<Project>.log). */
  readonly logPath: string;
  /**
   * The project's Saved folder, as a packaged build finds it from its binary: `<Project>/Saved`
   * beside `<Project>/Binaries/<Platform>/` when started there (the agent starts a build's binary
   * in its folder), else `<cwd>/<Project>/Saved`.
   */
  readonly savedDir: string;
  /** -MockSavedLog=<Name.log>: also write `<savedDir>/Logs/<Name.log>`, as a plugin writing its own log would. */
  readonly savedLogName: string | undefined;
  /** -stdout: also write every log line to standard output. */
  readonly stdout: boolean;
  /** Frame rate reported in InitialSettings (-PixelStreamingWebRTCFps, default 60 like PS2). */
  readonly fps: number;
  /** Bits per second (-PixelStreamingWebRTC{Start,Min,Max}Bitrate; PS2 defaults 1 M / 100 k / 40 M). */
  readonly startBitrate: number;
  readonly minBitrate: number;
  readonly maxBitrate: number;
  readonly allowPixelStreamingCommands: boolean;
  /** Signalling keep-alive ping interval in ms; 0 = off (-PixelStreamingSignalingKeepAliveInterval, seconds, default 30). */
  readonly keepAliveIntervalMs: number;
  /** UDP port range for ICE (-PixelStreamingWebRTCMinPort/MaxPort), when both are given. */
  readonly icePortRange: readonly [number, number] | undefined;
  /** Annex-B H.264 clip to loop (-MockFixture, default fixtures/testpattern.h264). */
  readonly fixturePath: string;
  /**
   * -MockStartupSeconds=N (or MOCK_UNREAL_STARTUP_SECONDS): dial signalling no earlier than N s
   * after the process started, idle meanwhile, as a packaged Unreal app loads its engine, shader
   * cache and level (5–60 s) before Pixel Streaming connects. Undefined: as soon as it can (~0.85 s).
   */
  readonly startupSeconds: number | undefined;
  readonly failure: MockFailureModes;
  /** Warnings about the command line (unknown or invalid arguments), for the log. */
  readonly notes: readonly string[];
}

/** Environment variables that select failure modes (documented in mock-unreal.ts). */
export const FAILURE_ENV = {
  crashAfterMs: 'MOCK_UNREAL_CRASH_AFTER_MS',
  hangOnStop: 'MOCK_UNREAL_HANG_ON_STOP',
  neverConnect: 'MOCK_UNREAL_NEVER_CONNECT',
  exitEarly: 'MOCK_UNREAL_EXIT_EARLY',
  kickOnUIInteraction: 'MOCK_UNREAL_KICK_ON_UI_INTERACTION',
  reconnectSignalling: 'MOCK_UNREAL_RECONNECT_SIGNALLING',
  helperProcess: 'MOCK_UNREAL_HELPER_PROCESS',
  signallingGate: 'MOCK_UNREAL_SIGNALLING_GATE',
  crashReport: 'MOCK_UNREAL_CRASH_REPORT',
} as const;

/** The environment variable of -MockStartupSeconds. */
export const STARTUP_SECONDS_ENV = 'MOCK_UNREAL_STARTUP_SECONDS';

const KNOWN_VALUES = new Set([
  'pixelstreamingurl', 'pixelstreamingconnectionurl', 'pixelstreamingsignallingurl', 'pixelstreamingip',
  'pixelstreamingport', 'pixelstreamingid', 'resx', 'resy', 'abslog', 'pixelstreamingencodercodec',
  'pixelstreamingwebrtcfps', 'pixelstreamingwebrtcmaxfps', 'pixelstreamingwebrtcstartbitrate',
  'pixelstreamingwebrtcminbitrate', 'pixelstreamingwebrtcmaxbitrate', 'pixelstreamingwebrtcminport',
  'pixelstreamingwebrtcmaxport', 'pixelstreamingsignalingkeepaliveinterval', 'mockcrashafterms', 'mockfixture', 'mocksignallinggate',
  'mocksavedlog', 'mockstartupseconds',
]);

/** Engine flags a packaged game accepts; the mock has nothing to do for them. */
const KNOWN_FLAGS = new Set([
  'renderoffscreen', 'forceres', 'unattended', 'windowed', 'fullscreen', 'log', 'stdout', 'fullstdoutlogoutput',
  'audiomixer', 'nosound', 'nosplash', 'allowpixelstreamingcommands', 'mockhangonstop', 'mockneverconnect',
  'mockexitearly', 'mockkickonuiinteraction', 'mockreconnectsignalling', 'mockhelperprocess', 'mockcrashreport',
]);

const TRUE_WORDS = new Set(['1', 'true', 'yes', 'on']);
const FALSE_WORDS = new Set(['0', 'false', 'no', 'off', '']);

function unquote(value: string): string {
  return value.length >= 2 && value.startsWith('"') && value.endsWith('"') ? value.slice(1, -1) : value;
}

interface ParsedArgs {
  projectName: string | undefined;
  values: Map<string, string>;
  flags: Map<string, string | undefined>;
  notes: string[];
}

/** Splits argv into the project name (first bare word), `-Key=Value` values and bare `-Flag`s (lower-cased keys; first occurrence wins, like FParse::Value). */
function splitArgs(argv: readonly string[]): ParsedArgs {
  const parsed: ParsedArgs = { projectName: undefined, values: new Map(), flags: new Map(), notes: [] };
  for (const arg of argv) {
    if (!arg.startsWith('-')) {
      // The project name normally comes first; wrappers may put their own flags before it.
      if (parsed.projectName === undefined) parsed.projectName = arg;
      else parsed.notes.push(`Ignoring unknown argument "${arg}"`);
      continue;
    }
    const body = arg.replace(/^-+/, '');
    const eq = body.indexOf('=');
    const key = (eq < 0 ? body : body.slice(0, eq)).toLowerCase();
    const value = eq < 0 ? undefined : unquote(body.slice(eq + 1));
    if (KNOWN_VALUES.has(key)) {
      if (value === undefined) parsed.notes.push(`Ignoring "${arg}": it needs a value (${arg}=...)`);
      else if (!parsed.values.has(key)) parsed.values.set(key, value);
    } else if (KNOWN_FLAGS.has(key)) {
      if (!parsed.flags.has(key)) parsed.flags.set(key, value);
    } else if (key.startsWith('pixelstreaming')) {
      parsed.notes.push(`Unknown Pixel Streaming argument "${arg}" ignored`);
    } else {
      parsed.notes.push(`Ignoring unknown argument "${arg}"`);
    }
  }
  return parsed;
}

function parseBool(raw: string | undefined, what: string, notes: string[]): boolean {
  if (raw === undefined) return false;
  const word = raw.trim().toLowerCase();
  if (TRUE_WORDS.has(word)) return true;
  if (!FALSE_WORDS.has(word)) notes.push(`Ignoring ${what}="${raw}": expected 1/0/true/false`);
  return false;
}

function parseInteger(raw: string | undefined, what: string, min: number, notes: string[]): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw.trim());
  if (raw.trim() === '' || !Number.isSafeInteger(value) || value < min) {
    notes.push(`Ignoring ${what}="${raw}": expected an integer >= ${min}`);
    return undefined;
  }
  return value;
}

function parseNumber(raw: string | undefined, what: string, notes: string[]): number | undefined {
  if (raw === undefined) return undefined;
  const value = Number(raw.trim());
  if (raw.trim() === '' || !Number.isFinite(value) || value < 0) {
    notes.push(`Ignoring ${what}="${raw}": expected a number >= 0`);
    return undefined;
  }
  return value;
}

function signallingUrl(args: ParsedArgs, notes: string[]): string | undefined {
  // PS2 parses the legacy -PixelStreamingURL last, so it wins over -PixelStreamingConnectionURL.
  const ip = args.values.get('pixelstreamingip');
  const port = args.values.get('pixelstreamingport');
  const url = args.values.get('pixelstreamingurl') ??
    args.values.get('pixelstreamingconnectionurl') ??
    args.values.get('pixelstreamingsignallingurl') ??
    (ip !== undefined ? `ws://${ip}:${port ?? '8888'}` : undefined);
  if (url === undefined || url === '') return undefined;
  if (!/^wss?:\/\/[^/\s]+/i.test(url)) {
    notes.push(`Ignoring signalling URL "${url}": expected ws://host:port or wss://host:port`);
    return undefined;
  }
  return url;
}

function gatePath(raw: string | undefined, cwd: string): string | undefined {
  return raw === undefined || raw === '' ? undefined : resolve(cwd, raw);
}

/**
 * Parses the command line (argv without node and script) and failure-mode environment.
 * Never throws: bad values fall back to defaults and are reported in `notes`.
 */
export function parseCommandLine(
  argv: readonly string[],
  env: Readonly<Record<string, string | undefined>>,
  cwd: string,
): MockUnrealConfig {
  const args = splitArgs(argv);
  const notes = args.notes;
  const value = (key: string): string | undefined => args.values.get(key);
  const flag = (key: string): boolean => args.flags.has(key) && parseBool(args.flags.get(key) ?? '1', `-${key}`, notes);

  const projectName = args.projectName ?? 'MockUnreal';
  const absLog = value('abslog');
  const projectDir = basename(dirname(cwd)) === 'Binaries' ? resolve(cwd, '..', '..') : join(cwd, projectName);
  const savedDir = join(projectDir, 'Saved');
  const logPath = absLog !== undefined && absLog !== ''
    ? (isAbsolute(absLog) ? absLog : resolve(cwd, absLog))
    : join(savedDir, 'Logs', `${projectName}.log`);
  const savedLog = value('mocksavedlog');
  let savedLogName: string | undefined;
  if (savedLog !== undefined) {
    if (/^[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.log$/.test(savedLog)) savedLogName = savedLog;
    else notes.push(`Ignoring -MockSavedLog="${savedLog}": expected a plain file name ending in .log`);
  }

  const codec = value('pixelstreamingencodercodec');
  if (codec !== undefined && codec.toUpperCase() !== 'H264') {
    notes.push(`-PixelStreamingEncoderCodec=${codec} requested, but the mock streams only H264`);
  }

  const minPort = parseInteger(value('pixelstreamingwebrtcminport'), '-PixelStreamingWebRTCMinPort', 1, notes);
  const maxPort = parseInteger(value('pixelstreamingwebrtcmaxport'), '-PixelStreamingWebRTCMaxPort', 1, notes);
  const icePortRange = minPort !== undefined && maxPort !== undefined && minPort <= maxPort && maxPort <= 65535
    ? ([minPort, maxPort] as const)
    : undefined;

  const keepAliveSeconds = parseNumber(value('pixelstreamingsignalingkeepaliveinterval'), '-PixelStreamingSignalingKeepAliveInterval', notes);
  const startupSeconds = parseNumber(value('mockstartupseconds'), '-MockStartupSeconds', notes) ?? parseNumber(env[STARTUP_SECONDS_ENV], STARTUP_SECONDS_ENV, notes);
  const fixture = value('mockfixture');

  const envCrash = parseInteger(env[FAILURE_ENV.crashAfterMs], FAILURE_ENV.crashAfterMs, 0, notes);
  const argCrash = parseInteger(value('mockcrashafterms'), '-MockCrashAfterMs', 0, notes);
  const envFlag = (name: string): boolean => parseBool(env[name], name, notes);

  const config: MockUnrealConfig = {
    projectName,
    commandLine: argv.join(' '),
    signallingUrl: signallingUrl(args, notes),
    streamerId: value('pixelstreamingid') || 'DefaultStreamer',
    resX: parseInteger(value('resx'), '-ResX', 1, notes) ?? 1280,
    resY: parseInteger(value('resy'), '-ResY', 1, notes) ?? 720,
    logPath,
    savedDir,
    savedLogName,
    stdout: flag('stdout'),
    fps: parseInteger(value('pixelstreamingwebrtcfps') ?? value('pixelstreamingwebrtcmaxfps'), '-PixelStreamingWebRTCFps', 1, notes) ?? 60,
    startBitrate: parseInteger(value('pixelstreamingwebrtcstartbitrate'), '-PixelStreamingWebRTCStartBitrate', 0, notes) ?? 1_000_000,
    minBitrate: parseInteger(value('pixelstreamingwebrtcminbitrate'), '-PixelStreamingWebRTCMinBitrate', 0, notes) ?? 100_000,
    maxBitrate: parseInteger(value('pixelstreamingwebrtcmaxbitrate'), '-PixelStreamingWebRTCMaxBitrate', 0, notes) ?? 40_000_000,
    allowPixelStreamingCommands: flag('allowpixelstreamingcommands'),
    keepAliveIntervalMs: Math.round((keepAliveSeconds ?? 30) * 1000),
    icePortRange,
    fixturePath: fixture !== undefined && fixture !== '' ? resolve(cwd, fixture) : DEFAULT_FIXTURE_PATH,
    startupSeconds: startupSeconds !== undefined && startupSeconds > 0 ? startupSeconds : undefined,
    failure: Object.freeze({
      crashAfterMs: argCrash ?? envCrash,
      hangOnStop: flag('mockhangonstop') || envFlag(FAILURE_ENV.hangOnStop),
      neverConnect: flag('mockneverconnect') || envFlag(FAILURE_ENV.neverConnect),
      exitEarly: flag('mockexitearly') || envFlag(FAILURE_ENV.exitEarly),
      kickOnUIInteraction: flag('mockkickonuiinteraction') || envFlag(FAILURE_ENV.kickOnUIInteraction),
      reconnectSignalling: flag('mockreconnectsignalling') || envFlag(FAILURE_ENV.reconnectSignalling),
      helperProcess: flag('mockhelperprocess') || envFlag(FAILURE_ENV.helperProcess),
      signallingGate: gatePath(value('mocksignallinggate') || env[FAILURE_ENV.signallingGate], cwd),
      crashReport: flag('mockcrashreport') || envFlag(FAILURE_ENV.crashReport),
    }),
    notes: Object.freeze([...notes]),
  };
  return Object.freeze(config);
}
