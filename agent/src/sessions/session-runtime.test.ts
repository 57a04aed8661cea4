// SessionRuntime with a real launch, its real loopback signalling server and relay; the test plays
// the Unreal app message by message. The launched stand-in only hands the test the
// -PixelStreamingURL it was given, so every frame the "app" sees is the runtime's own.
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino, type Logger } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { WebSocket } from 'ws';
import type { SessionEventKind, StartSessionCommand } from '@pixelfleet/proto';
import { encodeRelayedSignal, type RelayToViewerSignal, type ViewerToRelaySignal } from '@pixelfleet/signaling';
import { ManualClock } from '@pixelfleet/common';
import type { AppExit } from '../launcher/app-process';
import { OTHER_STREAMER_REASON, RELAY_PLAYER_ID, SECOND_STREAMER_REASON, SessionRuntime } from './session-runtime';

/** Connects to the test's port (argv[1]), writes the signalling URL it was launched with, and idles until stopped. */
const STAND_IN = `
const url = process.argv.find((a) => a.startsWith('-PixelStreamingURL=')).slice('-PixelStreamingURL='.length);
const tap = require('node:net').connect(Number(process.argv[1]), '127.0.0.1', () => tap.end(url));
setInterval(() => undefined, 60000);
`;

const COMMAND: StartSessionCommand = {
  kind: 'startSession',
  sessionId: 'session_1_1',
  projectId: 'prj_1',
  uploadId: 'upl_1',
  streamingId: 'streamer_1',
  playerId: 'player_1_1',
  codec: 'H264',
  minBitrateBps: 1_000_000,
  maxBitrateBps: 8_000_000,
  resX: 1280,
  resY: 720,
  fps: 30,
  launchArgs: [],
  maxRunTimeMinutes: 0,
  startupTimeoutSeconds: 30,
  warm: false,
};

/** Values in arrival order; next() waits for the first not yet taken. */
class Queue<T> {
  private readonly items: T[] = [];
  private readonly waiters: ((item: T) => void)[] = [];

  push(item: T): void {
    const waiter = this.waiters.shift();
    if (waiter) waiter(item);
    else this.items.push(item);
  }

  next(): Promise<T> {
    const item = this.items.shift();
    if (item !== undefined) return Promise.resolve(item);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/** The test's side of the app's signalling socket. */
interface FakeApp {
  readonly inbox: Queue<Record<string, unknown>>;
  send(message: Record<string, unknown>): void;
  readonly socket: WebSocket;
}

async function dialAsApp(url: string): Promise<FakeApp> {
  const socket = new WebSocket(url);
  const inbox = new Queue<Record<string, unknown>>();
  socket.on('message', (data) => inbox.push(JSON.parse((data as Buffer).toString('utf8')) as Record<string, unknown>));
  socket.on('error', () => undefined); // the runtime closing the socket at the end is not a failure
  await once(socket, 'open');
  return { inbox, socket, send: (message) => socket.send(JSON.stringify(message)) };
}

interface Session {
  readonly runtime: SessionRuntime;
  readonly signallingUrl: string;
  readonly reports: Queue<{ kind: SessionEventKind; extra: { message?: string; streamingId?: string } | undefined }>;
  /** Messages toward the viewer. */
  readonly signals: Queue<RelayToViewerSignal>;
  /** The app's socket, identified as streamer_1 (config, identify, endpointId, endpointIdConfirm done). */
  readonly app: FakeApp;
  /** The viewer's `subscribe` / `unsubscribe`, relayed by the control plane. */
  readonly subscribe: () => Promise<void>;
  readonly unsubscribe: () => Promise<void>;
}

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** The app answers a ping with pong in order: whatever it was sent before now has arrived first. */
async function nextAfterPing(app: FakeApp, time: number): Promise<Record<string, unknown>> {
  app.send({ type: 'ping', time });
  return app.inbox.next();
}

/** Completes the Wilbur handshake as Unreal does and checks what the app hears. */
async function identify(app: FakeApp, streamerId = 'streamer_1'): Promise<void> {
  await greeted(app);
  app.send({ type: 'endpointId', id: streamerId });
  expect(await app.inbox.next()).toStrictEqual({ type: 'endpointIdConfirm', committedId: streamerId });
}

/** The server's first two messages on every app socket. */
async function greeted(app: FakeApp): Promise<void> {
  expect(await app.inbox.next()).toStrictEqual({ type: 'config', peerConnectionOptions: {}, protocolVersion: '1.3.0' });
  expect(await app.inbox.next()).toStrictEqual({ type: 'identify' });
}

/** A socket of the app that registers another streamer and is refused: the close it sees. */
async function refusedStreamer(signallingUrl: string, streamerId: string): Promise<{ code: number; reason: string }> {
  const other = await dialAsApp(signallingUrl);
  cleanups.push(() => other.socket.terminate());
  await greeted(other);
  const closed = once(other.socket, 'close') as Promise<[number, Buffer]>;
  other.send({ type: 'endpointId', id: streamerId });
  const [code, reason] = await closed;
  return { code, reason: reason.toString('utf8') };
}

/** A session logger as the session manager makes one (sessionId bound), whose JSON lines the test reads. */
function recordingLog(): { log: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const log = pino({ level: 'debug' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) }).child({ sessionId: COMMAND.sessionId });
  return { log, lines };
}

async function startSession(options: { log?: Logger; warm?: boolean } = {}): Promise<Session> {
  const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-runtime-'));
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
  const tap: Server = createServer();
  tap.listen(0, '127.0.0.1');
  await once(tap, 'listening');
  cleanups.push(() => new Promise<void>((resolve) => tap.close(() => resolve())));
  const urlArrived = new Promise<string>((resolve) => {
    tap.once('connection', (connection) => {
      let text = '';
      connection.setEncoding('utf8');
      connection.on('data', (chunk: string) => (text += chunk));
      connection.on('end', () => resolve(text));
    });
  });

  const reports: Session['reports'] = new Queue();
  const signals: Session['signals'] = new Queue();
  let finished!: (exit: AppExit) => void;
  const exited = new Promise<AppExit>((resolve) => (finished = resolve));
  const runtime = new SessionRuntime({
    command: { ...COMMAND, warm: options.warm ?? false },
    launcherCommand: [process.execPath, '-e', STAND_IN, '--', String((tap.address() as AddressInfo).port)],
    build: undefined,
    sessionDir: join(dir, 'session'),
    appEnv: {},
    ice: { iceServers: [], hostAddresses: ['127.0.0.1'] },
    report: (kind, extra) => reports.push({ kind, extra }),
    signal: (message) => signals.push(message),
    onFinished: (exit) => finished(exit),
    log: options.log ?? pino({ level: 'silent' }),
  });
  const started = runtime.start();
  cleanups.push(async () => {
    await runtime.stop(2_000);
    await exited;
  });
  const signallingUrl = await urlArrived;
  expect(signallingUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/[A-Za-z0-9_-]{43}$/);
  const app = await dialAsApp(signallingUrl);
  cleanups.push(() => app.socket.terminate());
  await identify(app);
  await started;
  expect(await reports.next()).toEqual({ kind: 'appStarted', extra: undefined });
  expect(await reports.next()).toEqual({ kind: 'appIdentified', extra: { streamingId: 'streamer_1' } });
  expect(await signals.next()).toEqual({ type: 'config', peerConnectionOptions: { iceServers: [] } });

  const viewerSignal = (message: ViewerToRelaySignal) =>
    runtime.handleViewerSignal({ sessionId: COMMAND.sessionId, playerId: COMMAND.playerId, json: encodeRelayedSignal(message) });
  return {
    runtime,
    signallingUrl,
    reports,
    signals,
    app,
    subscribe: () => viewerSignal({ type: 'subscribe', streamerId: 'streamer_1' }),
    unsubscribe: () => viewerSignal({ type: 'unsubscribe' }),
  };
}

const PLAYER_CONNECTED = { type: 'playerConnected', playerId: RELAY_PLAYER_ID, dataChannel: true, sfu: false };
const PLAYER_DISCONNECTED = { type: 'playerDisconnected', playerId: RELAY_PLAYER_ID };

describe('SessionRuntime toward the app', () => {
  it('sends playerConnected when the viewer subscribes, not when the app identifies; playerDisconnected on unsubscribe', async () => {
    const { app, signals, subscribe, unsubscribe } = await startSession();
    // Identified, and no playerConnected: the pong is the next thing the app hears.
    expect(await nextAfterPing(app, 1)).toStrictEqual({ type: 'pong', time: 1 });

    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    expect(await signals.next()).toMatchObject({ type: 'offer', sdp: expect.stringMatching(/^v=0\r\n/) as unknown });

    await unsubscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_DISCONNECTED);
    expect(await nextAfterPing(app, 2)).toStrictEqual({ type: 'pong', time: 2 });

    // Subscribing again announces the player again, as Wilbur does.
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
  });

  it('a warm StartSession gives the app the relay\'s player as soon as it identifies (the relay takes its video before any viewer); a subscribe then announces nothing again', async () => {
    const { app, signals, subscribe } = await startSession({ warm: true });
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    await subscribe();
    expect(await signals.next()).toMatchObject({ type: 'offer', sdp: expect.stringMatching(/^v=0\r\n/) as unknown });
    expect(await nextAfterPing(app, 1)).toStrictEqual({ type: 'pong', time: 1 });
  });

  it('says again that its app identified when a new control link asks (a restarted control plane does not know it)', async () => {
    const { runtime, reports, signals, subscribe, app } = await startSession();
    runtime.reannounceIdentified();
    // No viewer yet: the viewer's config again first (a warm instance's went with the control plane that restarted).
    expect(await signals.next()).toEqual({ type: 'config', peerConnectionOptions: { iceServers: [] } });
    expect(await reports.next()).toEqual({ kind: 'appIdentified', extra: { streamingId: 'streamer_1' } });
    // Subscribed (negotiating) as well: the viewer may need to list the streamer again on a new socket.
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    runtime.reannounceIdentified();
    expect(await reports.next()).toEqual({ kind: 'appIdentified', extra: { streamingId: 'streamer_1' } });
  });

  it('an app that re-dials its signalling while the viewer is subscribed gets the player back once it identifies', async () => {
    const { app, signallingUrl, subscribe } = await startSession();
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);

    app.socket.close(1001, 'signalling reconnect');
    await once(app.socket, 'close');
    const again = await dialAsApp(signallingUrl);
    cleanups.push(() => again.socket.terminate());
    await identify(again);
    expect(await again.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
  });

  it("only a dialler with the session secret (the path of the app's URL) gets an upgrade, on the first connection and after a re-dial; refusals are logged at warn, sampled, and the secret never", async () => {
    const { log, lines } = recordingLog();
    const { app, signallingUrl, subscribe } = await startSession({ log });
    const port = new URL(signallingUrl).port;
    const secret = new URL(signallingUrl).pathname.slice(1);
    /** The HTTP status a dialler gets instead of an upgrade (undefined: it got one). */
    const dial = async (url: string): Promise<number | undefined> => {
      const socket = new WebSocket(url);
      cleanups.push(() => socket.terminate());
      return await new Promise((resolve) => {
        socket.once('open', () => resolve(undefined));
        socket.once('unexpected-response', (_req, res) => resolve(res.statusCode));
        socket.once('error', () => undefined);
      });
    };
    // A rival on the same worker knows the port (a scan, the command line's port), not the secret.
    expect(await dial(`ws://127.0.0.1:${port}`)).toBe(401);
    expect(await dial(`ws://127.0.0.1:${port}/${secret.slice(0, -1)}`)).toBe(401);
    expect(await dial(`ws://127.0.0.1:${port}/${secret}x`)).toBe(401);
    expect(await dial(`ws://127.0.0.1:${port}/${secret}?streamer=1`)).toBe(401);

    // The app's socket drops and the slot is open: a rival racing its re-dial is still refused.
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    app.socket.terminate();
    await once(app.socket, 'close');
    expect(await dial(`ws://127.0.0.1:${port}/`)).toBe(401);
    const again = await dialAsApp(signallingUrl);
    cleanups.push(() => again.socket.terminate());
    await identify(again);
    expect(await again.inbox.next()).toStrictEqual(PLAYER_CONNECTED);

    const refusals = lines.filter((l) => l.msg === 'app signalling upgrade refused: the URL lacks the session secret (another process on this worker dialled the session port)');
    expect(refusals).toHaveLength(1);
    expect(refusals[0]).toMatchObject({ level: 40, count: 1 });
    const started = lines.find((l) => l.msg === 'app started');
    expect(JSON.stringify(started)).toContain(`127.0.0.1:${port}/<redacted>`);
    expect(JSON.stringify(lines)).not.toContain(secret);
  });

  it('a second streamer socket from the app (PS2 CreateStreamer) is closed with 1008 once it identifies, logged at warn once however often it re-dials; the viewer stays with the first', async () => {
    const { log, lines } = recordingLog();
    const { app, runtime, reports, signallingUrl, subscribe, unsubscribe } = await startSession({ log });
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);

    expect(await refusedStreamer(signallingUrl, 'streamer_2')).toEqual({ code: 1008, reason: SECOND_STREAMER_REASON });
    // PS2 re-dials a refused streamer every 2 s: refused each time, warned about once.
    expect(await refusedStreamer(signallingUrl, 'streamer_2')).toEqual({ code: 1008, reason: SECOND_STREAMER_REASON });
    // The same id as the session's from another socket is a second streamer too.
    expect(await refusedStreamer(signallingUrl, 'streamer_1')).toEqual({ code: 1008, reason: SECOND_STREAMER_REASON });

    // The first app keeps the viewer's player, and nothing was reported for the others.
    expect(await nextAfterPing(app, 1)).toStrictEqual({ type: 'pong', time: 1 });
    await unsubscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_DISCONNECTED);
    runtime.reannounceIdentified();
    expect(await reports.next()).toEqual({ kind: 'appIdentified', extra: { streamingId: 'streamer_1' } });

    const warnings = lines.filter((line) => line['level'] === 40);
    expect(warnings).toEqual([
      expect.objectContaining({ sessionId: COMMAND.sessionId, refusedStreamerId: 'streamer_2', streamerId: 'streamer_1', outcome: 'closed', msg: 'the app registered another streamer; refused, the session streams its first' }),
      expect.objectContaining({ sessionId: COMMAND.sessionId, refusedStreamerId: 'streamer_1', streamerId: 'streamer_1', outcome: 'closed' }),
    ]);
  });

  it('a second endpointId with another id on the streamer\'s socket is answered with the first id confirmed; the socket keeps serving the viewer', async () => {
    const { log, lines } = recordingLog();
    const { app, subscribe } = await startSession({ log });
    app.send({ type: 'endpointId', id: 'streamer_2' });
    expect(await app.inbox.next()).toStrictEqual({ type: 'endpointIdConfirm', committedId: 'streamer_1' });
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    expect(app.socket.readyState).toBe(WebSocket.OPEN);
    expect(lines.filter((line) => line['level'] === 40)).toEqual([
      expect.objectContaining({ sessionId: COMMAND.sessionId, refusedStreamerId: 'streamer_2', streamerId: 'streamer_1', outcome: 'kept' }),
    ]);
  });

  it('after the streamer\'s socket closes, only its own id may come back: another id is refused, so a re-dial race cannot swap the viewer\'s streamer', async () => {
    const { app, signallingUrl, subscribe } = await startSession();
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    app.socket.close(1001, 'signalling reconnect');
    await once(app.socket, 'close');

    expect(await refusedStreamer(signallingUrl, 'streamer_2')).toEqual({ code: 1008, reason: OTHER_STREAMER_REASON });
    const again = await dialAsApp(signallingUrl);
    cleanups.push(() => again.socket.terminate());
    await identify(again);
    expect(await again.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
  });

  it("the app's disconnectPlayer for the viewer is reported once with its reason, and answered with playerDisconnected", async () => {
    const { app, reports, subscribe, unsubscribe } = await startSession();
    // Before the viewer subscribes the app has no such player: dropped, nothing reported.
    app.send({ type: 'disconnectPlayer', playerId: RELAY_PLAYER_ID, reason: 'too early' });
    expect(await nextAfterPing(app, 1)).toStrictEqual({ type: 'pong', time: 1 });

    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    app.send({ type: 'disconnectPlayer', playerId: 'someone-else', reason: 'not ours' });
    app.send({ type: 'disconnectPlayer', playerId: RELAY_PLAYER_ID, reason: 'kicked by the game' });
    expect(await app.inbox.next()).toStrictEqual(PLAYER_DISCONNECTED);
    expect(await reports.next()).toEqual({ kind: 'appDisconnectedViewer', extra: { message: 'kicked by the game' } });

    // A repeat finds no player: no second report (the next report is the one below).
    app.send({ type: 'disconnectPlayer', playerId: RELAY_PLAYER_ID, reason: 'again' });
    expect(await nextAfterPing(app, 2)).toStrictEqual({ type: 'pong', time: 2 });
    await unsubscribe(); // the app has no player left to hear of
    expect(await nextAfterPing(app, 3)).toStrictEqual({ type: 'pong', time: 3 });
    await subscribe();
    expect(await app.inbox.next()).toStrictEqual(PLAYER_CONNECTED);
    app.send({ type: 'disconnectPlayer', playerId: RELAY_PLAYER_ID });
    expect(await app.inbox.next()).toStrictEqual(PLAYER_DISCONNECTED);
    expect(await reports.next()).toEqual({ kind: 'appDisconnectedViewer', extra: { message: '' } });
  });
});

describe('SessionRuntime on the injected clock', () => {
  it('starts its clock at launch and fails the start with STARTUP_TIMEOUT when the clock passes startupTimeoutSeconds', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-runtime-'));
    cleanups.push(() => rmSync(dir, { recursive: true, force: true }));
    const clock = new ManualClock(Date.parse('2026-05-01T00:00:00Z'));
    const reports: SessionEventKind[] = [];
    let exit: AppExit | undefined;
    const runtime = new SessionRuntime({
      command: COMMAND,
      // An app that never dials its signalling.
      launcherCommand: [process.execPath, '-e', 'setInterval(() => undefined, 60000)'],
      build: undefined,
      sessionDir: join(dir, 'session'),
      appEnv: {},
      ice: { iceServers: [], hostAddresses: ['127.0.0.1'] },
      report: (kind) => reports.push(kind),
      signal: () => undefined,
      onFinished: (e) => (exit = e),
      log: pino({ level: 'silent' }),
      clock,
    });
    expect(runtime.startedAtMs).toBe(Date.parse('2026-05-01T00:00:00Z'));
    const started = runtime.start();
    started.catch(() => undefined);
    await vi.waitFor(() => expect(reports).toEqual(['appStarted']), { timeout: 10_000, interval: 10 });
    clock.advance(COMMAND.startupTimeoutSeconds * 1000 - 1);
    expect(reports).toEqual(['appStarted']); // no real time makes it time out, and not a millisecond early
    clock.advance(1);
    await expect(started).rejects.toMatchObject({ name: 'CommandFailure', code: 'STARTUP_TIMEOUT', message: 'the app did not connect within 30 s' });
    // The app is stopped; its output drain runs on the same clock.
    await vi.waitFor(
      () => {
        clock.advance(1_000);
        expect(exit).toBeDefined();
      },
      { timeout: 10_000, interval: 20 },
    );
    expect(reports).toEqual(['appStarted', 'appStopped']);
  });
});
