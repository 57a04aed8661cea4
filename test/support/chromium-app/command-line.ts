// The chromium app's configuration, read once from the Unreal command line the agent gives a
// packaged build (`<Project> -PixelStreamingURL=… -PixelStreamingID=… -ResX= -ResY= -ABSLOG=…`
// and the project's fps and bitrates) plus where to write its libwebrtc stats. Keys are
// case-insensitive and the first occurrence wins, as Unreal's FParse::Value reads them; anything
// else is noted for the log, never fatal, as a game ignores arguments it does not know.
import { isAbsolute, resolve } from 'node:path';

/** The environment variable naming the stats file (JSON lines); the build's binary script sets it. */
export const STATS_FILE_ENV = 'CHROMIUM_APP_STATS';

export interface ChromiumAppConfig {
  readonly projectName: string;
  /** The arguments as given, for the `LogInit: Command Line:` line. */
  readonly commandLine: string;
  /** ws:// URL of the signalling server (PS2's -PixelStreamingConnectionURL or the legacy -PixelStreamingURL). */
  readonly signallingUrl: string;
  readonly streamerId: string;
  /** Canvas size, pixels (-ResX/-ResY, default 1280×720). */
  readonly width: number;
  readonly height: number;
  /** Frames per second drawn and captured (-PixelStreamingWebRTCFps, default 30). */
  readonly fps: number;
  /** The encoder's ceiling, bits per second (-PixelStreamingWebRTCMaxBitrate); undefined = libwebrtc's own. */
  readonly maxBitrateBps: number | undefined;
  /** Absolute path of the engine log (-ABSLOG; default `<cwd>/<Project>.log`). */
  readonly logPath: string;
  /** Absolute path of the stats file (STATS_FILE_ENV); undefined = no stats written. */
  readonly statsPath: string | undefined;
  /** What was ignored or defaulted, for the log. */
  readonly notes: readonly string[];
}

/** Keys the app reads or knows a packaged build accepts (lower case). */
const KNOWN_KEYS = new Set([
  'pixelstreamingurl', 'pixelstreamingconnectionurl', 'pixelstreamingid', 'resx', 'resy', 'abslog',
  'pixelstreamingwebrtcfps', 'pixelstreamingwebrtcstartbitrate', 'pixelstreamingwebrtcminbitrate', 'pixelstreamingwebrtcmaxbitrate',
  'pixelstreamingencodercodec', 'renderoffscreen', 'forceres', 'unattended', 'windowed', 'stdout', 'log',
]);

function positiveInteger(raw: string | undefined, what: string, fallback: number | undefined, notes: string[]): number | undefined {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (Number.isSafeInteger(value) && value > 0) return value;
  notes.push(`Ignoring ${what}="${raw}": expected a positive integer`);
  return fallback;
}

/**
 * Parses argv (without node and the script) and the environment.
 * @throws Error when no signalling URL is given: the app would have nothing to do.
 */
export function parseChromiumAppCommandLine(argv: readonly string[], env: Readonly<Record<string, string | undefined>>, cwd: string): ChromiumAppConfig {
  const values = new Map<string, string>();
  const notes: string[] = [];
  let projectName: string | undefined;
  for (const arg of argv) {
    if (!arg.startsWith('-')) {
      if (projectName === undefined) projectName = arg;
      else notes.push(`Ignoring unknown argument "${arg}"`);
      continue;
    }
    const body = arg.replace(/^-+/, '');
    const eq = body.indexOf('=');
    const key = (eq < 0 ? body : body.slice(0, eq)).toLowerCase();
    if (!KNOWN_KEYS.has(key)) notes.push(`Ignoring unknown argument "${arg}"`);
    else if (eq >= 0 && !values.has(key)) values.set(key, body.slice(eq + 1).replace(/^"(.*)"$/, '$1'));
  }
  const project = projectName ?? 'ChromiumApp';
  // PS2 reads -PixelStreamingConnectionURL, PS1 only the legacy flag; the agent passes both with one value.
  const signallingUrl = values.get('pixelstreamingconnectionurl') ?? values.get('pixelstreamingurl');
  if (signallingUrl === undefined || !/^wss?:\/\//.test(signallingUrl)) {
    throw new Error(`no signalling URL: expected -PixelStreamingURL=ws://… or -PixelStreamingConnectionURL=ws://… (got ${JSON.stringify(signallingUrl)})`);
  }
  const absLog = values.get('abslog');
  const statsPath = env[STATS_FILE_ENV];
  return Object.freeze({
    projectName: project,
    commandLine: argv.join(' '),
    signallingUrl,
    streamerId: values.get('pixelstreamingid') || 'DefaultStreamer',
    width: positiveInteger(values.get('resx'), '-ResX', 1280, notes)!,
    height: positiveInteger(values.get('resy'), '-ResY', 720, notes)!,
    fps: positiveInteger(values.get('pixelstreamingwebrtcfps'), '-PixelStreamingWebRTCFps', 30, notes)!,
    maxBitrateBps: positiveInteger(values.get('pixelstreamingwebrtcmaxbitrate'), '-PixelStreamingWebRTCMaxBitrate', undefined, notes),
    logPath: absLog !== undefined && absLog !== '' ? (isAbsolute(absLog) ? absLog : resolve(cwd, absLog)) : resolve(cwd, `${project}.log`),
    statsPath: statsPath !== undefined && statsPath !== '' ? resolve(cwd, statsPath) : undefined,
    notes: Object.freeze(notes),
  });
}
