// The viewer page in a real Chromium (Debian's, never a downloaded one), against a stub signalling
// server: queue positions, the close sentence, the iframe API, telemetry delivery and the
// PixelStreaming object on `window.pixelStreaming`.

import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { WebSocketServer, type WebSocket } from 'ws';
import { bundlePlayer } from '../bundle';
import { VIEWER_CLOSE_SENTENCES as CLOSE_CODE_SENTENCES } from '@pixelfleet/signaling/viewer-closes';
import type { PlayerToHostMessage } from '../embed-messages';
import { playerContentSecurityPolicy, renderPlayerPage } from '../page';
import type { TelemetryEventRow, TelemetryRequestBody } from '../telemetry/rows';

const CHROMIUM = '/usr/bin/chromium';
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--autoplay-policy=no-user-gesture-required',
  '--allow-loopback-in-peer-connection',
  '--disable-features=WebRtcHideLocalIpsWithMdns',
];
const PROJECT = 'proj-1';
const WAIT_MS = 10_000;

interface TelemetryPost {
  readonly token: string | undefined;
  readonly body: TelemetryRequestBody;
}

/** Signalling sockets as the page opens them, with the messages each has sent. */
class SignallingStub {
  readonly wss = new WebSocketServer({ noServer: true });
  readonly received = new Map<WebSocket, unknown[]>();
  private waiters: ((socket: WebSocket) => void)[] = [];
  private arrived: WebSocket[] = [];

  constructor() {
    this.wss.on('connection', (socket) => {
      const messages: unknown[] = [];
      this.received.set(socket, messages);
      socket.on('message', (data: Buffer) => messages.push(JSON.parse(data.toString('utf8'))));
      const waiter = this.waiters.shift();
      if (waiter === undefined) this.arrived.push(socket);
      else waiter(socket);
    });
  }

  next(): Promise<WebSocket> {
    const socket = this.arrived.shift();
    if (socket !== undefined) return Promise.resolve(socket);
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

function send(socket: WebSocket, message: object): void {
  socket.send(JSON.stringify(message));
}

function hostPage(playerUrl: string): string {
  return `<!doctype html><html><body>
<script>window.received = []; addEventListener('message', (e) => { if (e.data && e.data.source === 'pixelfleet') received.push(e.data); });</script>
<iframe src="${playerUrl}" width="640" height="360" allow="fullscreen; autoplay"></iframe>
</body></html>`;
}

describe('viewer page in Chromium', () => {
  let server: Server;
  let signalling: SignallingStub;
  let context: BrowserContext;
  let userDataDir: string;
  let port: number;
  const telemetry: TelemetryPost[] = [];

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) {
      throw new Error(`${CHROMIUM} is missing: install Debian's chromium package (this test never downloads a browser)`);
    }
    const bundle = await bundlePlayer();
    signalling = new SignallingStub();
    server = createServer((request: IncomingMessage, response: ServerResponse) => {
      const path = new URL(request.url ?? '/', 'http://stub').pathname;
      const reply = (status: number, type: string, body: string, headers: Record<string, string> = {}): void => {
        response.writeHead(status, { 'content-type': type, 'cache-control': 'no-store', ...headers }).end(body);
      };
      const query = new URL(request.url ?? '/', 'http://stub').searchParams;
      if (request.method === 'GET' && path === `/share/${PROJECT}`) {
        // ?embed=<origin>,…: the project's embedOrigins, in the page and (unless &frame=any) in frame-ancestors, as share-routes.ts serves them.
        const embedOrigins = query.get('embed')?.split(',') ?? [];
        const frameAncestors = embedOrigins.length > 0 && query.get('frame') !== 'any' ? ["'self'", ...embedOrigins] : ['*'];
        reply(200, 'text/html; charset=utf-8', renderPlayerPage({ projectId: PROJECT, assetBase: '/share/assets', title: 'Stub', embedOrigins }), {
          'content-security-policy': playerContentSecurityPolicy({ frameAncestors }),
        });
      } else if (request.method === 'GET' && path === '/share/assets/player.js') {
        reply(200, 'text/javascript; charset=utf-8', bundle.js);
      } else if (request.method === 'GET' && path === '/share/assets/player.css') {
        reply(200, 'text/css; charset=utf-8', bundle.css);
      } else if (request.method === 'GET' && path === '/host') {
        reply(200, 'text/html; charset=utf-8', hostPage(`http://127.0.0.1:${port}/share/${PROJECT}${query.has('player') ? `?${query.get('player') ?? ''}` : ''}`));
      } else if (request.method === 'POST' && path === '/api/telemetry') {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', () => {
          const token = request.headers['x-viewer-token'];
          telemetry.push({ token: typeof token === 'string' ? token : undefined, body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as TelemetryRequestBody });
          response.writeHead(204).end();
        });
      } else {
        reply(404, 'text/plain', 'not found');
      }
    });
    server.on('upgrade', (request, socket, head) => {
      if (request.url !== `/share/${PROJECT}/signalling`) {
        socket.destroy();
        return;
      }
      signalling.wss.handleUpgrade(request, socket, head, (ws) => signalling.wss.emit('connection', ws, request));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
    userDataDir = mkdtempSync(join(tmpdir(), 'pixelfleet-chromium-'));
    context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
    await context.addInitScript(() => {
      const store = window as unknown as { cspViolations: string[] };
      store.cspViolations = [];
      document.addEventListener('securitypolicyviolation', (event) => store.cspViolations.push(`${event.violatedDirective} ${event.blockedURI}`));
    });
  });

  afterAll(async () => {
    await context?.close();
    for (const client of signalling?.wss.clients ?? []) client.terminate();
    signalling?.wss.close();
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    if (userDataDir) rmSync(userDataDir, { recursive: true, force: true });
  });

  async function telemetryFor(sessionId: string): Promise<TelemetryPost> {
    await expect.poll(() => telemetry.some((post) => post.body.sessionId === sessionId), { timeout: WAIT_MS }).toBe(true);
    return telemetry.find((post) => post.body.sessionId === sessionId) as TelemetryPost;
  }

  /** Drive one queued session that ends with 4001, checking the screen at each step. */
  async function queueThenNoServer(frame: Pick<Page, 'getByText'>, sessionId: string): Promise<WebSocket> {
    const socket = await signalling.next();
    send(socket, { type: 'pixelfleetSession', sessionId, viewerToken: `token-${sessionId}`, telemetryUrl: '/api/telemetry', resumeWindowSeconds: 30 });
    send(socket, { type: 'pixelfleetQueue', position: 2, queueLength: 3 });
    await frame.getByText('You are number 2 in line').waitFor({ timeout: WAIT_MS });
    send(socket, { type: 'pixelfleetQueue', position: 2, queueLength: 3, estimatedWaitSeconds: 250 });
    await frame.getByText('1 person is ahead of you. Estimated wait: about 5 minutes.').waitFor({ timeout: WAIT_MS });
    send(socket, { type: 'pixelfleetQueue', position: 'first', queueLength: 3 }); // malformed: ignored
    send(socket, { type: 'pixelfleetQueue', position: 1, queueLength: 2 });
    await frame.getByText('You are number 1 in line').waitFor({ timeout: WAIT_MS });
    send(socket, { type: 'pixelfleetQueue', position: 1, queueLength: 2, waitingForServer: true });
    await frame.getByText('Waiting for a streaming server to come back. You keep your place in line.').waitFor({ timeout: WAIT_MS });
    socket.close(4001, 'no worker in region eu-west');
    await frame.getByText(CLOSE_CODE_SENTENCES[4001] ?? '').waitFor({ timeout: WAIT_MS });
    return socket;
  }

  it('shows the queue position live, then the 4001 sentence, and reports telemetry with the viewer token', async () => {
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${port}/share/${PROJECT}`);
    const socket = await queueThenNoServer(page, 'session_1_1');

    expect(signalling.received.get(socket)).toContainEqual({ type: 'listStreamers' });
    const post = await telemetryFor('session_1_1');
    expect(post.token).toBe('token-session_1_1');
    expect(post.body.viewerToken).toBe('token-session_1_1');
    const row = post.body.rows.find((candidate): candidate is TelemetryEventRow => 'event' in candidate && candidate.event === 'disconnected');
    expect(row).toMatchObject({
      sessionId: 'session_1_1',
      logType: 'Webrtc',
      code: 4001,
      reasonName: 'noServerAvailable',
      os: 'Linux',
      deviceType: 'desktop',
      embedded: false,
      domainUrl: `http://127.0.0.1:${port}/share/${PROJECT}`,
    });
    expect(row?.browser).toMatch(/^Chrome \d+$/);
    expect(new Date(row?.timestamp ?? '').toISOString()).toBe(row?.timestamp);
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    await page.close();
  });

  it("exposes the page's live PixelStreaming object as window.pixelStreaming, as Epic's stock player does", async () => {
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${port}/share/${PROJECT}`);
    const socket = await signalling.next();
    expect(
      await page.evaluate(() => {
        const stream = window.pixelStreaming;
        return ['emitUIInteraction', 'emitCommand', 'addResponseEventListener', 'addEventListener', 'disconnect'].filter((name) => typeof (stream as unknown as Record<string, unknown> | undefined)?.[name] !== 'function');
      }),
    ).toEqual([]);
    // The very instance on the page's socket: its events fire for what that socket receives.
    await page.evaluate(() => {
      const store = window as unknown as { listed: string[][] };
      store.listed = [];
      window.pixelStreaming?.addEventListener('streamerListMessage', (event) => store.listed.push(event.data.messageStreamerList.ids));
    });
    expect(signalling.received.get(socket)).toContainEqual({ type: 'listStreamers' });
    send(socket, { type: 'config', peerConnectionOptions: {} }); // first, as the gateway sends it: subscribing replaces the peer connection config made
    send(socket, { type: 'streamerList', ids: ['streamer_1'] });
    await expect.poll(() => page.evaluate(() => (window as unknown as { listed: string[][] }).listed), { timeout: WAIT_MS }).toEqual([['streamer_1']]);
    await expect.poll(() => signalling.received.get(socket), { timeout: WAIT_MS }).toContainEqual({ type: 'subscribe', streamerId: 'streamer_1' });
    expect(await page.evaluate(() => (window as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    socket.close(1000, 'done');
    await page.close();
  });

  it('tells the embedding page queue-2, queue-1, disconnected through postMessage', async () => {
    const page = await context.newPage();
    await page.goto(`http://localhost:${port}/host`); // another origin than the player's 127.0.0.1
    const frame = page.frameLocator('iframe');
    await queueThenNoServer(frame, 'session_2_2');

    const received = (): Promise<PlayerToHostMessage[]> => page.evaluate(() => (window as unknown as { received: PlayerToHostMessage[] }).received);
    await expect.poll(async () => (await received()).length, { timeout: WAIT_MS }).toBe(3);
    expect(await received()).toEqual([
      { source: 'pixelfleet', type: 'state', state: 'queue-2' },
      { source: 'pixelfleet', type: 'state', state: 'queue-1' },
      {
        source: 'pixelfleet',
        type: 'state',
        state: 'disconnected',
        code: 4001,
        reason: 'no worker in region eu-west',
        message: CLOSE_CODE_SENTENCES[4001],
      },
    ]);
    const post = await telemetryFor('session_2_2');
    expect(post.body.rows[0]).toMatchObject({ embedded: true, domainUrl: `http://localhost:${port}` });
    await page.close();
  });

  describe("a project's embed allow-list (embedOrigins)", () => {
    const hostReceived = (page: Page): Promise<PlayerToHostMessage[]> => page.evaluate(() => (window as unknown as { received: PlayerToHostMessage[] }).received);
    const hostWith = (player: string) => `http://localhost:${port}/host?player=${encodeURIComponent(player)}`;

    it('a listed site frames the page and gets its events', async () => {
      const page = await context.newPage();
      await page.goto(hostWith(`embed=https://shop.example.com,http://localhost:${port}`));
      await queueThenNoServer(page.frameLocator('iframe'), 'session_3_1');
      await expect.poll(async () => (await hostReceived(page)).map((m) => m.type === 'state' && m.state), { timeout: WAIT_MS }).toEqual(['queue-2', 'queue-1', 'disconnected']);
      await page.close();
    });

    it('a page framing it from a site not listed hears nothing, even where the frame loads (the events name their target origin)', async () => {
      const page = await context.newPage();
      await page.goto(hostWith('embed=https://shop.example.com&frame=any'));
      await queueThenNoServer(page.frameLocator('iframe'), 'session_3_2');
      // The page showed every state above: had it posted with target '*', the host would hold them now.
      expect(await hostReceived(page)).toEqual([]);
      await page.close();
    });

    it('a site not listed cannot frame the page at all (CSP frame-ancestors)', async () => {
      const page = await context.newPage();
      await page.goto(hostWith('embed=https://shop.example.com'));
      await expect.poll(() => page.frames()[1]?.url(), { timeout: WAIT_MS }).toMatch(/^chrome-error:/);
      expect(await hostReceived(page)).toEqual([]);
      await page.close();
    });
  });
});
