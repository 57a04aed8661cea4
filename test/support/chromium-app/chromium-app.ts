// The chromium app: a stand-in for a packaged Unreal app that is real libwebrtc, for full-stack
// tests of what the relay asks of an app (issue 21). Started by the agent as a build's binary is,
// with the Unreal command line; it serves the streamer page (streamer-page.ts) on 127.0.0.1, opens
// it in one headless Debian chromium, writes an Unreal-format log to -ABSLOG and the page's
// libwebrtc stats to the stats file (app-stats.ts). It exits 0 on SIGTERM/SIGINT and when its
// signalling socket closes (closing chromium first), 1 when it cannot start or chromium dies.
import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { UnrealLog, type Verbosity } from '../../mock-unreal/unreal-log';
import { CHROMIUM_ARGS, CHROMIUM_PATH } from '../chromium';
import type { AppStats } from './app-stats';
import { parseChromiumAppCommandLine, type ChromiumAppConfig } from './command-line';
import { STREAMER_PAGE, type StreamerPageConfig } from './streamer-page';

/** The page gathers host candidates only with media permission, which the fake capture device grants without asking. */
const FAKE_MEDIA_ARGS = ['--use-fake-ui-for-media-stream', '--use-fake-device-for-media-stream'];
/** A stop that takes longer than this exits anyway (the agent forces the tree down a little later). */
const SHUTDOWN_DEADLINE_MS = 5_000;
const VERBOSITIES = new Set<Verbosity>(['Fatal', 'Error', 'Warning', 'Display', 'Log', 'Verbose']);

let config: ChromiumAppConfig;
try {
  config = parseChromiumAppCommandLine(process.argv.slice(2), process.env, process.cwd());
} catch (error) {
  process.stderr.write(`chromium-app: ${(error as Error).message}\n`);
  process.exit(1);
}
const log = UnrealLog.open(config.logPath);
log.display('LogInit', `Running engine for game: ${config.projectName}`);
log.log('LogInit', `Command Line: ${config.commandLine}`);
log.log('LogInit', `Engine Version: chromium app (headless ${CHROMIUM_PATH}, pid ${process.pid})`);
for (const note of config.notes) log.warning('LogInit', note);
if (config.statsPath !== undefined) {
  mkdirSync(dirname(config.statsPath), { recursive: true });
  writeFileSync(config.statsPath, '');
}

const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(STREAMER_PAGE));
let browser: Browser | undefined;
let stopping = false;

async function shutdown(why: string, code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  log.log('LogExit', `Preparing to exit (${why}).`);
  const deadline = setTimeout(() => {
    log.warning('LogExit', `Shutdown took longer than ${SHUTDOWN_DEADLINE_MS} ms; exiting anyway`);
    exit(code);
  }, SHUTDOWN_DEADLINE_MS);
  await browser?.close().catch(() => undefined);
  await new Promise<void>((resolve) => server.close(() => resolve()));
  clearTimeout(deadline);
  exit(code);
}

function exit(code: number): never {
  log.log('LogExit', 'Exiting.');
  log.close();
  process.exit(code);
}

for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => {
    log.warning('LogCore', `*** INTERRUPTED *** : SHUTTING DOWN (${signal})`);
    void shutdown(signal, 0);
  });
}

async function start(): Promise<void> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  // The app's own signal handlers stop chromium in order (playwright's would kill it first).
  browser = await chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: [...CHROMIUM_ARGS, ...FAKE_MEDIA_ARGS], handleSIGINT: false, handleSIGTERM: false, handleSIGHUP: false });
  browser.on('disconnected', () => {
    if (!stopping) {
      log.error('LogPixelStreaming', 'Chromium went away');
      void shutdown('chromium went away', 1);
    }
  });
  const page = await browser.newPage();
  page.on('pageerror', (error) => log.error('LogPixelStreaming', `Page error: ${error.message}`));
  await page.exposeFunction('appLog', (category: string, verbosity: string, message: string) => {
    log.write(category, VERBOSITIES.has(verbosity as Verbosity) ? (verbosity as Verbosity) : 'Log', message);
  });
  await page.exposeFunction('appStatsLine', (stats: AppStats) => {
    if (config.statsPath !== undefined && !stopping) appendFileSync(config.statsPath, `${JSON.stringify(stats)}\n`);
  });
  await page.exposeFunction('appSignallingClosed', (code: number, reason: string) => {
    // As the mock app does by default: no signalling, nothing to stream for.
    log.warning('LogPixelStreaming', `Signalling connection closed (code ${code}${reason ? `, ${reason}` : ''}); exiting`);
    void shutdown('signalling closed', 0);
  });
  await page.goto(origin);
  const pageConfig: StreamerPageConfig = {
    signallingUrl: config.signallingUrl,
    streamerId: config.streamerId,
    width: config.width,
    height: config.height,
    fps: config.fps,
    maxBitrateBps: config.maxBitrateBps,
  };
  await page.evaluate((c) => (window as unknown as { startApp(c: StreamerPageConfig): Promise<void> }).startApp(c), pageConfig);
  log.display('LogInit', 'Game Engine Initialized.');
  log.log('LogPixelStreaming', `Streaming a ${config.width}x${config.height} game scene at ${config.fps} fps${config.maxBitrateBps === undefined ? '' : `, at most ${config.maxBitrateBps} bps`}`);
}

start().catch((error: unknown) => {
  log.error('LogInit', `Cannot start: ${error instanceof Error ? error.message : String(error)}`);
  void shutdown('start failed', 1);
});
