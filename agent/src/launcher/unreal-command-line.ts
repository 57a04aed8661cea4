// The Unreal app's command line for one session (pixel-streaming.md §3): the base argument,
// the Pixel Streaming connection (both plugins' spellings) and identity, render and log flags,
// the project's codec, frame rate and bitrates, then the project's own launch arguments, checked
// again here.
import { posix, win32 } from 'node:path';
import { checkLaunchArgs, CODECS, type Codec } from '@pixelfleet/proto';
import { LaunchError } from './launch-error';

/** Largest frame Pixel Streaming encodes, per side (PSInfra#50). */
export const MAX_RESOLUTION = 4096;
export const MAX_FPS = 240;

/**
 * Start bitrate heuristic. A libwebrtc sender feeding werift starts from its start bitrate and
 * climbs only about 8 %/s, or not at all with TWCC (werift-notes.md §7), and the relay forwards
 * no viewer feedback to Unreal, so the start bitrate is close to what the first minute of the
 * session streams at. Starting at the project's minimum (100 kbps by default) means a blurred
 * picture for tens of seconds; the midpoint of min and max (20 Mbps with the 100 k–40 M defaults)
 * overruns many viewers' links. So: about 0.1 bit per pixel per frame (a usual H.264 figure for
 * good quality: 6.2 Mbps at 1080p30), held within [1, 10] Mbps, then within the project's
 * [min, max], which always wins.
 */
export const START_BITS_PER_PIXEL = 0.1;
export const START_BITRATE_FLOOR_BPS = 1_000_000;
export const START_BITRATE_CAP_BPS = 10_000_000;

/** Windows' CreateProcess limit on the whole command line is 32,767 characters. */
export const MAX_COMMAND_LINE_CHARS = 32_000;

/** A log path may hold spaces (it is quoted on Windows), not quotes or control characters. */
const UNSAFE_PATH_CHARS = /["'\u0000-\u001f\u007f]/;
const UNSAFE_ID_CHARS = /[\s"'\u0000-\u001f\u007f]/;

export interface UnrealArgsInput {
  /** The Unreal project (folder) name; the first argument of a code project's exe. */
  projectName: string;
  /** What comes before the flags; default `[projectName]` (a Blueprint-only build passes its .uproject path). */
  baseArgs?: readonly string[];
  /** The session's loopback signalling server with its secret path, e.g. `ws://127.0.0.1:49731/<secret>` (see loopbackSignallingUrl). */
  signallingUrl: string;
  /** Pixel Streaming streamer id the app announces. */
  streamerId: string;
  resX: number;
  resY: number;
  codec: Codec;
  /** Frames per second. */
  fps: number;
  /** Default: chooseStartBitrateBps(…); must lie within [minBitrateBps, maxBitrateBps]. */
  startBitrateBps?: number;
  minBitrateBps: number;
  maxBitrateBps: number;
  /** Absolute path of the engine log (`-ABSLOG`); must end in .log or .txt. */
  logPath: string;
  /** The project's extra arguments, `-Name` or `-Name=value`. */
  launchArgs: readonly string[];
}

/** A session's app signalling secret: URL-safe base64, at least 32 characters (appSignallingSecret makes 43). */
const SIGNALLING_SECRET = /^[A-Za-z0-9_-]{32,128}$/;

/**
 * The URL the app dials: the session's loopback port and, as its path, the session's secret. Any
 * process on the worker can find the port; only the app it was launched for knows the path, and
 * the session's signalling server refuses every upgrade without it (session-runtime.ts).
 */
export function loopbackSignallingUrl(port: number, secret: string): string {
  if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new LaunchError('INVALID_SETTINGS', `signalling port ${port} is not a TCP port`);
  if (!SIGNALLING_SECRET.test(secret)) throw new LaunchError('INVALID_SETTINGS', 'the signalling secret must be 32–128 URL-safe base64 characters');
  return `ws://127.0.0.1:${port}/${secret}`;
}

/** The start bitrate in bps for a session (see START_BITS_PER_PIXEL for why). */
export function chooseStartBitrateBps(s: { resX: number; resY: number; fps: number; minBitrateBps: number; maxBitrateBps: number }): number {
  const byPicture = Math.round(s.resX * s.resY * s.fps * START_BITS_PER_PIXEL);
  const sane = Math.min(START_BITRATE_CAP_BPS, Math.max(START_BITRATE_FLOOR_BPS, byPicture));
  return Math.min(s.maxBitrateBps, Math.max(s.minBitrateBps, sane));
}

/**
 * Checks the project's launch arguments again with the rule the settings API applies
 * (checkLaunchArgs in @pixelfleet/proto): at most 64, each `-Name` or `-Name=value`, and none
 * naming an argument the agent sets.
 * @throws LaunchError INVALID_LAUNCH_ARGS naming the first offending argument.
 */
export function validateLaunchArgs(launchArgs: readonly unknown[]): string[] {
  const refusal = checkLaunchArgs(launchArgs);
  if (refusal === undefined) return launchArgs as string[];
  const which = refusal.index === undefined ? 'the launch arguments' : `launch argument ${refusal.index + 1} ${JSON.stringify(launchArgs[refusal.index])}`;
  throw new LaunchError('INVALID_LAUNCH_ARGS', `${which} ${refusal.why}`);
}

/**
 * The argv after the executable for one session.
 * @throws LaunchError INVALID_SETTINGS or INVALID_LAUNCH_ARGS.
 */
export function buildUnrealArgs(input: UnrealArgsInput): string[] {
  const bad = (why: string) => new LaunchError('INVALID_SETTINGS', why);
  if (!/^[A-Za-z][A-Za-z0-9_-]{0,63}$/.test(input.projectName)) throw bad(`project name ${JSON.stringify(input.projectName)} is not an Unreal project name`);
  if (!/^wss?:\/\/[^\s"']+$/.test(input.signallingUrl)) throw bad(`signalling URL ${JSON.stringify(input.signallingUrl)} is not a ws:// URL`);
  if (input.streamerId === '' || input.streamerId.length > 256 || UNSAFE_ID_CHARS.test(input.streamerId)) {
    throw bad(`streamer id ${JSON.stringify(input.streamerId)} is empty, too long or has spaces, quotes or control characters`);
  }
  for (const [key, value] of [['resX', input.resX], ['resY', input.resY]] as const) {
    if (!Number.isInteger(value) || value < 2 || value > MAX_RESOLUTION || value % 2 !== 0) throw bad(`${key} ${value} must be an even integer from 2 to ${MAX_RESOLUTION}`);
  }
  if (!(CODECS as readonly string[]).includes(input.codec)) throw bad(`codec ${JSON.stringify(input.codec)} is not one of ${CODECS.join(', ')}`);
  if (!Number.isInteger(input.fps) || input.fps < 1 || input.fps > MAX_FPS) throw bad(`fps ${input.fps} must be an integer from 1 to ${MAX_FPS}`);
  for (const [key, value] of [['minBitrateBps', input.minBitrateBps], ['maxBitrateBps', input.maxBitrateBps]] as const) {
    if (!Number.isSafeInteger(value) || value < 1) throw bad(`${key} ${value} must be a positive integer`);
  }
  if (input.minBitrateBps > input.maxBitrateBps) throw bad(`minBitrateBps ${input.minBitrateBps} is above maxBitrateBps ${input.maxBitrateBps}`);
  const start = input.startBitrateBps ?? chooseStartBitrateBps(input);
  if (!Number.isSafeInteger(start) || start < input.minBitrateBps || start > input.maxBitrateBps) {
    throw bad(`startBitrateBps ${start} must be an integer within [minBitrateBps, maxBitrateBps]`);
  }
  if (!(posix.isAbsolute(input.logPath) || win32.isAbsolute(input.logPath)) || !/\.(log|txt)$/i.test(input.logPath) || UNSAFE_PATH_CHARS.test(input.logPath)) {
    throw bad(`log path ${JSON.stringify(input.logPath)} must be absolute, end in .log or .txt and hold no quotes or control characters`);
  }
  const launchArgs = validateLaunchArgs(input.launchArgs);
  const args = [
    ...(input.baseArgs ?? [input.projectName]),
    // PixelStreaming2's own name since UE 5.6 (5.5 only logs it as unknown), and the legacy name
    // that PS1 and every PS2 read (PS2 parses it last, with a warning, so it wins there). Both carry
    // the same URL: whichever plugin and version the build has, the app dials us.
    `-PixelStreamingConnectionURL=${input.signallingUrl}`,
    `-PixelStreamingURL=${input.signallingUrl}`,
    `-PixelStreamingID=${input.streamerId}`,
    '-RenderOffScreen',
    '-ForceRes',
    `-ResX=${input.resX}`,
    `-ResY=${input.resY}`,
    '-Unattended',
    `-ABSLOG=${input.logPath}`,
    `-PixelStreamingEncoderCodec=${input.codec}`,
    `-PixelStreamingWebRTCFps=${input.fps}`,
    `-PixelStreamingWebRTCStartBitrate=${start}`,
    `-PixelStreamingWebRTCMinBitrate=${input.minBitrateBps}`,
    `-PixelStreamingWebRTCMaxBitrate=${input.maxBitrateBps}`,
    ...launchArgs,
  ];
  const length = args.reduce((n, a) => n + a.length + 3, 0);
  if (length > MAX_COMMAND_LINE_CHARS) throw new LaunchError('INVALID_LAUNCH_ARGS', `the command line would be ${length} characters; Windows allows about ${MAX_COMMAND_LINE_CHARS}`);
  return args;
}

/**
 * Quotes arguments the way Unreal's own parser reads them, for a verbatim Windows command
 * line: Node's default quoting wraps a whole `-ABSLOG=C:\a b\x.log` in quotes, which
 * FParse::Value then cuts at the space; Unreal expects `-ABSLOG="C:\a b\x.log"`. Arguments
 * without whitespace pass unchanged.
 * @throws LaunchError INVALID_LAUNCH_ARGS for an argument with a double quote, or a quoted value ending in a backslash.
 */
export function toWindowsUnrealArgs(args: readonly string[]): string[] {
  return args.map((arg) => {
    if (arg.includes('"')) throw new LaunchError('INVALID_LAUNCH_ARGS', `argument ${JSON.stringify(arg)} holds a double quote`);
    if (!/\s/.test(arg)) return arg;
    if (arg.endsWith('\\')) throw new LaunchError('INVALID_LAUNCH_ARGS', `argument ${JSON.stringify(arg)} has spaces and ends in a backslash`);
    const m = /^(-[A-Za-z][A-Za-z0-9_.]*=)(.*)$/s.exec(arg);
    return m ? `${m[1]!}"${m[2]!}"` : `"${arg}"`;
  });
}

/** argv[0] for a verbatim Windows command line: the program path, quoted. */
export function windowsProgramArg(exe: string): string {
  if (exe.includes('"')) throw new LaunchError('INVALID_SETTINGS', `executable path ${JSON.stringify(exe)} holds a double quote`);
  return `"${exe}"`;
}
