// The viewer's signalling path through the control plane with real parts: a WebSocket client
// speaking Epic's player dialect, the real gateway and scheduler, a real agent whose relay is
// scripted. Queue positions, the relayed offer/answer/ICE, promotion, and every refusal code.
import { get as httpGet, type IncomingHttpHeaders } from 'node:http';
import { gunzipSync } from 'node:zlib';
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '@pixelfleet/agent';
import { MAX_ICE_CANDIDATES_PER_SESSION } from '@pixelfleet/control-plane/test-support';
import { DEFAULT_PLAYER_RATE_LIMIT, VIEWER_CLOSES } from '@pixelfleet/signaling';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { FakePlayer } from '../support/fake-player';
import { seedLiveBuild, setProjectEnabled, storedSessionCount } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function setup(options: { liveBuild?: boolean; worker?: boolean; overrides?: Record<string, unknown>; clock?: ManualClock } = {}) {
  const t = await startTestControlPlane({ ...(options.overrides ? { overrides: options.overrides } : {}), ...(options.clock ? { clock: options.clock } : {}) });
  cleanups.push(() => t.destroy());
  const owner = await t.cp.accounts.createUser(`v${Date.now()}@example.com`);
  const projectId = (await t.cp.accounts.createProject(owner.userId, 'Gateway', 'europe')).projectId;
  if (options.liveBuild !== false) {
    seedLiveBuild(t.cp, projectId);
  }
  const script = new ScriptedSessions();
  let agent: Agent | undefined;
  if (options.worker !== false) {
    agent = (await startTestAgent({ grpcAddress: t.started.grpcAddress, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal })).agent;
    script.agent = agent;
    cleanups.push(() => agent!.close());
    await linkReaches(agent, 'connected');
  }
  const wsUrl = `${t.started.publicUrls.share.replace(/^http/, 'ws')}/${projectId}/signalling`;
  const connect = async (query = '', headers?: Record<string, string>) => {
    const p = await FakePlayer.connect(`${wsUrl}${query}`, headers);
    cleanups.push(() => p.socket.terminate());
    return p;
  };
  const sessionCount = () => storedSessionCount(t.cp);
  /** Another worker of the region joins, its relay scripted too. */
  const addWorker = async (): Promise<ScriptedSessions> => {
    const more = new ScriptedSessions();
    const { agent: added } = await startTestAgent({ grpcAddress: t.started.grpcAddress, handlers: more.handlers, inventory: more.inventory, onSignal: more.onSignal });
    more.agent = added;
    cleanups.push(() => added.close());
    await linkReaches(added, 'connected');
    return more;
  };
  /** Sets the project's embed allow-list through the settings API, as its owner would. */
  const setEmbedOrigins = async (embedOrigins: string[]) => {
    const owner = t.cp.accounts.requireProject(projectId).ownerUserId;
    const res = await fetch(`${t.started.publicUrls.api}/projects/${projectId}/settings`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ userId: owner, apiKey: await t.cp.accounts.issueKey(owner), embedOrigins }),
    });
    expect(res.status).toBe(200);
  };
  return {
    t,
    projectId,
    setEmbedOrigins,
    script,
    connect,
    sessionCount,
    agentHandle: () => agent,
    addWorker,
    agentSignals: (type: string) => script.signals.filter((s) => (JSON.parse(s.json) as { type: string }).type === type),
  };
}

describe('signalling through the gateway', () => {
  it('walks a viewer from the line to a relayed WebRTC negotiation and Running', async () => {
    const { t, script, connect, agentSignals } = await setup();
    const player = await connect();
    player.send({ type: 'listStreamers' }); // Epic's frontend asks on open

    const session = await player.next('pixelfleetSession');
    const sessionId = session.sessionId as string;
    expect(sessionId).toMatch(/^session_\d+_\d+$/);
    expect(session.viewerToken).toMatch(/^pfv_/);
    expect(session.telemetryUrl).toBe(`${t.started.publicUrls.platform}/api/v1/telemetry`);
    expect(await player.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
    expect(await player.next('pixelfleetStatus')).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
    await expect.poll(() => script.started).toEqual([sessionId]);
    expect(player.received.map((m) => m.type)).not.toContain('config'); // config waits for the worker's ICE servers

    const iceServers = [{ urls: ['stun:stun.example.com:3478'] }];
    script.signal(sessionId, { type: 'config', peerConnectionOptions: { iceServers } });
    expect(await player.next('config')).toEqual({ type: 'config', peerConnectionOptions: { iceServers }, protocolVersion: '1.3.0' });

    script.report(sessionId, 'appIdentified', { streamingId: 'streamer_abc' });
    expect(await player.next('streamerList')).toEqual({ type: 'streamerList', ids: ['streamer_abc'] });
    player.send({ type: 'subscribe', streamerId: 'streamer_abc' });
    await expect.poll(() => agentSignals('subscribe').length).toBe(1);
    expect(JSON.parse(agentSignals('subscribe')[0]!.json)).toEqual({ type: 'subscribe', streamerId: 'streamer_abc' });

    script.signal(sessionId, { type: 'offer', sdp: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n' });
    expect(await player.next('offer')).toEqual({ type: 'offer', sdp: 'v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\n' });
    const candidate = { candidate: 'candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host', sdpMid: '0', sdpMLineIndex: 0 };
    script.signal(sessionId, { type: 'iceCandidate', candidate });
    expect(await player.next('iceCandidate')).toEqual({ type: 'iceCandidate', candidate });

    player.send({ type: 'answer', sdp: 'v=0\r\nanswer\r\n', minBitrateBps: 0, maxBitrateBps: 0 });
    player.send({ type: 'iceCandidate', candidate: { candidate: 'candidate:2 1 udp 1 127.0.0.1 50001 typ host', sdpMid: '0', sdpMLineIndex: 0 } });
    await expect.poll(() => agentSignals('iceCandidate').length).toBe(1);
    expect(JSON.parse(agentSignals('answer')[0]!.json)).toEqual({ type: 'answer', sdp: 'v=0\r\nanswer\r\n', minBitrateBps: 0, maxBitrateBps: 0 });
    expect(agentSignals('answer')[0]!.sessionId).toBe(sessionId);

    script.report(sessionId, 'viewerConnected');
    await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Running');
    player.send({ type: 'ping', time: 42 });
    expect(await player.next('pong')).toEqual({ type: 'pong', time: 42 });

    player.close();
    await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    expect(script.stopped).toEqual([sessionId]);
  });

  it('a queued viewer is told when its line waits for a streaming server to come back, and is placed when one comes', async () => {
    const { connect, agentHandle, addWorker } = await setup();
    const first = await connect();
    await first.next('pixelfleetStatus');
    const second = await connect();
    await second.next('pixelfleetSession');
    expect(await second.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
    await agentHandle()!.close(); // the region's only worker drops its link
    expect(await second.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: true });
    await addWorker();
    expect(await second.next('pixelfleetStatus')).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
  });

  it('a socket arriving while the control plane stops is closed with 1012 and gets no session', async () => {
    const { t, connect, sessionCount } = await setup();
    t.cp.gateway.close();
    const late = await connect();
    expect(await late.closed).toEqual({ code: 1012, reason: 'service restarting' });
    expect(sessionCount()).toBe(0);
  });

  it("a waiting viewer gets an estimated wait once the region's recent sessions give one, and none before", async () => {
    const { script, connect } = await setup();
    const first = await connect();
    const firstId = (await first.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toContain(firstId);
    const early = await connect();
    await early.next('pixelfleetSession');
    // No session of the region has ended yet: no estimate.
    expect(await early.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
    early.close();
    first.close();
    await expect.poll(() => script.stopped).toContain(firstId);
    // Three more sessions placed on the one slot and ended: the region's recent lifetimes.
    for (let i = 0; i < 3; i++) {
      const viewer = await connect();
      const id = (await viewer.next('pixelfleetSession')).sessionId as string;
      await expect.poll(() => script.started).toContain(id);
      viewer.close();
      await expect.poll(() => script.stopped).toContain(id);
    }
    const holder = await connect();
    const holderId = (await holder.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toContain(holderId);
    const waiting = await connect();
    await waiting.next('pixelfleetSession');
    const queued = await waiting.next('pixelfleetQueue');
    expect(queued).toMatchObject({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
    // Sessions of well under a second on one slot: the next departure is due within seconds.
    expect(queued.estimatedWaitSeconds).toBeTypeOf('number');
    expect(queued.estimatedWaitSeconds).toBeLessThanOrEqual(5);
  });

  it('a second viewer waits with its position and is promoted when the first leaves', async () => {
    const { script, connect } = await setup();
    const first = await connect();
    const firstId = (await first.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([firstId]);
    const second = await connect();
    const secondId = (await second.next('pixelfleetSession')).sessionId as string;
    expect(await second.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
    const third = await connect();
    await third.next('pixelfleetSession');
    expect(await third.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 2, queueLength: 2, waitingForServer: false });

    second.close(); // the one in front of the third leaves
    expect(await third.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });

    first.close();
    expect(await third.next('pixelfleetStatus')).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
    expect(script.started).not.toContain(secondId);
  });

  it('the viewer is told why its session ended: app crash → 4006', async () => {
    const { script, connect } = await setup();
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([sessionId]);
    script.crash(sessionId);
    expect(await player.closed).toEqual({ code: 4006, reason: 'app closed or crashed' });
  });

  it("the app's disconnectPlayer → 4012 with the app's reason; the session ends as the app disconnecting the viewer and its app is stopped", async () => {
    const { t, script, connect } = await setup();
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([sessionId]);
    script.report(sessionId, 'appIdentified', { streamingId: 'streamer_abc' });
    script.report(sessionId, 'viewerConnected');
    await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Running');

    script.report(sessionId, 'appDisconnectedViewer', { message: 'kicked by the host' });
    expect(await player.closed).toEqual({ code: 4012, reason: 'the app disconnected the viewer: kicked by the host' });
    await expect.poll(() => script.stopped).toEqual([sessionId]);
    await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('app disconnected the viewer');
  });

  it('an app that disconnects the viewer without a reason → 4012 with ours alone', async () => {
    const { script, connect } = await setup();
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([sessionId]);
    script.report(sessionId, 'appDisconnectedViewer');
    expect(await player.closed).toEqual({ code: 4012, reason: 'the app disconnected the viewer' });
  });

  it('drops relay messages a viewer must not receive', async () => {
    const { t, script, connect } = await setup();
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([sessionId]);
    script.signal(sessionId, { type: 'playerConnected', playerId: 'x' });
    script.signal(sessionId, { type: 'config', peerConnectionOptions: {} });
    await player.next('config');
    expect(player.received.map((m) => m.type)).not.toContain('playerConnected');
    expect(t.logs.text()).toContain('agent sent a signal a viewer may not receive');
    expect(t.logs.text()).toContain('signal of type \\"playerConnected\\" is not relayed in this direction');
  });
});

describe('refusals', () => {
  it('unknown project → 4000, disabled → 4000, no live build → 4002, no worker → 4001', async () => {
    const a = await setup();
    const unknown = await FakePlayer.connect(`${a.t.started.publicUrls.share.replace(/^http/, 'ws')}/prj_nope/signalling`);
    expect(await unknown.closed).toEqual({ code: 4000, reason: 'project not found' });
    setProjectEnabled(a.t.cp, a.projectId, false);
    expect(await (await a.connect()).closed).toEqual({ code: 4000, reason: 'project disabled' });

    const b = await setup({ liveBuild: false });
    expect(await (await b.connect()).closed).toEqual({ code: 4002, reason: 'app not found: the project has no live build' });

    const c = await setup({ worker: false });
    expect(await (await c.connect()).closed).toEqual({ code: 4001, reason: 'no streaming server available in this region' });
  });

  it('a hostile frame closes that viewer with a reason and ends its session', async () => {
    const { t, connect } = await setup();
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    player.send({ type: 'endpointId', id: 'I am a streamer' });
    const closed = await player.closed;
    expect(closed.code).toBe(1008);
    expect(closed.reason).toContain('endpointId');
    await expect.poll(() => t.cp.sessions.get(sessionId).status).not.toBe('Enqueued');
  });
});

describe('flood limits', () => {
  it("a viewer's ICE candidates past MAX_ICE_CANDIDATES_PER_SESSION never reach the agent: 1008 'too many ICE candidates'", async () => {
    const { t, script, connect, agentSignals } = await setup();
    expect(MAX_ICE_CANDIDATES_PER_SESSION).toBe(64);
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([sessionId]);
    for (let i = 0; i <= MAX_ICE_CANDIDATES_PER_SESSION; i++) {
      player.send({ type: 'iceCandidate', candidate: { candidate: `candidate:${i} 1 udp 1 127.0.0.1 ${40_000 + i} typ host`, sdpMid: '0', sdpMLineIndex: 0 } });
    }
    expect(await player.closed).toEqual({ code: 1008, reason: 'too many ICE candidates' });
    await expect.poll(() => script.stopped).toEqual([sessionId]);
    expect(agentSignals('iceCandidate')).toHaveLength(MAX_ICE_CANDIDATES_PER_SESSION);
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    expect(t.logs.text()).toContain('viewer closed: too many ICE candidates');
  });

  it('candidates naming non-public addresses never reach the agent (network.allowPrivateViewerCandidates false): the public ones and the end of candidates do', async () => {
    const { t, script, connect, agentSignals } = await setup({ overrides: { network: { allowPrivateUrls: true, allowPrivateViewerCandidates: false } } });
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([sessionId]);
    const send = (candidate: string) => player.send({ type: 'iceCandidate', candidate: { candidate, sdpMid: '0', sdpMLineIndex: 0 } });
    for (const address of ['10.0.0.5', '127.0.0.1', '169.254.169.254', '192.168.1.20', 'fe80::1', 'fd00::5', '4f3a6c1e-2b7d-4c55-9a0e-6f1b2c3d4e5f.local', 'metadata.internal.example']) {
      send(`candidate:1 1 udp 2122260223 ${address} 22 typ host generation 0`);
    }
    const publicCandidates = [
      'candidate:2 1 udp 1686052607 93.184.216.34 61234 typ srflx raddr 10.0.0.5 rport 61234 generation 0',
      'candidate:3 1 udp 1686052351 2a01:4f8:c0c:1::7 61235 typ srflx raddr fe80::1 rport 61235 generation 0',
      '',
    ];
    for (const candidate of publicCandidates) send(candidate);
    await expect.poll(() => agentSignals('iceCandidate').length).toBe(publicCandidates.length);
    // One socket and one gRPC stream keep the order: a relayed private candidate would be among these.
    expect(agentSignals('iceCandidate').map((s) => (JSON.parse(s.json) as { candidate: { candidate: string } }).candidate.candidate)).toEqual(publicCandidates);
    expect(t.logs.text()).toContain('viewer ICE candidate naming a non-public address dropped');
  });

  it("a viewer flooding pings without reading is closed with 1008 'too many messages' and its session ends", async () => {
    const { t, connect } = await setup();
    const player = await connect();
    const sessionId = (await player.next('pixelfleetSession')).sessionId as string;
    player.socket.pause(); // reads nothing from here on
    for (let i = 0; i < 1_000; i++) player.send({ type: 'ping', time: i });
    await expect.poll(() => t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    expect(t.cp.gateway.size).toBe(0);
    player.socket.resume();
    expect(await player.closed).toEqual({ code: 1008, reason: 'too many messages' });
    // Answered up to the default burst (DEFAULT_PLAYER_RATE_LIMIT), then nothing.
    expect(player.received.filter((m) => m.type === 'pong').length).toBeLessThanOrEqual(DEFAULT_PLAYER_RATE_LIMIT.burst + 5);
  });
});

describe('admission limits', () => {
  it('the page has a sentence for each admission close code', () => {
    expect(VIEWER_CLOSES.tooManyConnections).toMatchObject({ code: 4010, sentence: 'Too many streams are open from your network. Close one and try again.' });
    expect(VIEWER_CLOSES.queueFull).toMatchObject({ code: 4011, sentence: 'Too many viewers are waiting for this stream. Please try again later.' });
  });

  it('an address with viewers.maxPerAddress viewers is turned away with 4010 and no session; a slot frees when one leaves', async () => {
    const { t, script, connect, sessionCount } = await setup({ overrides: { viewers: { maxPerAddress: 2 } } });
    const first = await connect();
    const firstId = (await first.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([firstId]);
    const second = await connect();
    await second.next('pixelfleetSession'); // waiting in line counts as much as watching
    expect(sessionCount()).toBe(2);

    const third = await connect();
    expect(await third.closed).toEqual({ code: 4010, reason: 'too many viewer connections from this address' });
    expect(sessionCount()).toBe(2);
    expect(t.logs.text()).toContain('viewer refused: too many from its address');

    first.close();
    await expect.poll(() => t.cp.sessions.get(firstId).status).toBe('Terminated');
    const fourth = await connect();
    expect((await fourth.next('pixelfleetSession')).sessionId).toMatch(/^session_/);
  });

  it('sockets waiting to resume count against their address, and are limited on their own', async () => {
    const { t, connect, sessionCount } = await setup({ overrides: { viewers: { maxPerAddress: 2 } } });
    const waiting = [await connect('?resume=session_1_1'), await connect('?resume=session_1_2')];
    const third = await connect('?resume=session_1_3');
    expect(await third.closed).toEqual({ code: 4010, reason: 'too many viewer connections from this address' });
    expect(t.logs.text()).toContain('resuming socket refused: too many from its address');
    const fresh = await connect();
    expect(await fresh.closed).toEqual({ code: 4010, reason: 'too many viewer connections from this address' });
    expect(sessionCount()).toBe(0);
    // The two still waiting are untouched: they get their own answer (unknown session → 4008).
    waiting[0]!.send({ type: 'pixelfleetResume', viewerToken: 'pfv_wrong' });
    expect((await waiting[0]!.closed).code).toBe(4008);
    expect(waiting[1]!.socket.readyState).toBe(waiting[1]!.socket.OPEN);
  });

  it('counts the client a trusted proxy names in X-Forwarded-For, not the proxy', async () => {
    const { connect, sessionCount } = await setup({ overrides: { viewers: { maxPerAddress: 1 }, http: { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'] } } });
    const a = await connect('', { 'x-forwarded-for': '203.0.113.5' });
    await a.next('pixelfleetSession');
    const b = await connect('', { 'x-forwarded-for': '203.0.113.6' });
    await b.next('pixelfleetSession');
    const again = await connect('', { 'x-forwarded-for': '203.0.113.5' });
    expect((await again.closed).code).toBe(4010);
    expect(sessionCount()).toBe(2);
  });

  it('counts an IPv6 client by its /64: another interface id of the same subscriber is the same client', async () => {
    const { connect, sessionCount } = await setup({ overrides: { viewers: { maxPerAddress: 1 }, http: { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'] } } });
    const a = await connect('', { 'x-forwarded-for': '2a01:4f8:c0c:1::10' });
    await a.next('pixelfleetSession');
    const neighbour = await connect('', { 'x-forwarded-for': '2a01:4f8:c0c:2::10' });
    await neighbour.next('pixelfleetSession');
    const rotated = await connect('', { 'x-forwarded-for': '2a01:4f8:c0c:1:9f3e:1:2:3' });
    expect((await rotated.closed).code).toBe(4010);
    expect(sessionCount()).toBe(2);
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const { connect } = await setup({ overrides: { viewers: { maxPerAddress: 1 } } });
    const a = await connect('', { 'x-forwarded-for': '203.0.113.5' });
    await a.next('pixelfleetSession');
    const b = await connect('', { 'x-forwarded-for': '203.0.113.6' }); // both are 127.0.0.1 to us
    expect((await b.closed).code).toBe(4010);
  });

  it("a project whose subscription is not active gets no new session (4015, one log line a minute); a viewer already in keeps its session, and an active subscription admits again", async () => {
    const { t, projectId, connect, sessionCount } = await setup();
    const watching = await connect();
    const sessionId = (await watching.next('pixelfleetSession')).sessionId as string;
    t.cp.accounts.setSubscriptionStatus(projectId, 'past_due');
    for (let i = 0; i < 3; i++) {
      const refused = await connect();
      expect(await refused.closed).toEqual({ code: 4015, reason: "the project's subscription is not active" });
    }
    expect(sessionCount()).toBe(1);
    expect(t.cp.sessions.get(sessionId).status).not.toBe('Terminated');
    expect(t.logs.lines.filter((l) => l.includes("viewer refused: the project's subscription is not active"))).toHaveLength(1);
    expect(VIEWER_CLOSES.subscriptionInactive).toMatchObject({ code: 4015, sentence: 'This stream is not available right now.' });
    t.cp.accounts.setSubscriptionStatus(projectId, 'active');
    await (await connect()).next('pixelfleetSession');
    expect(sessionCount()).toBe(2);
  });

  it('a project whose queue holds viewers.maxQueuedPerProject sessions turns the next viewer away with 4011', async () => {
    const { t, script, connect, sessionCount } = await setup({ overrides: { viewers: { maxQueuedPerProject: 1 } } });
    const first = await connect();
    const firstId = (await first.next('pixelfleetSession')).sessionId as string;
    await expect.poll(() => script.started).toEqual([firstId]); // placed: no longer in the queue
    const second = await connect();
    expect(await second.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });

    const third = await connect();
    expect(await third.closed).toEqual({ code: 4011, reason: 'the queue for this stream is full' });
    expect(sessionCount()).toBe(2);
    expect(t.logs.text()).toContain('viewer refused: the queue is full');

    second.close();
    await expect.poll(() => t.cp.sessions.counts(t.cp.sessions.get(firstId).projectId).queueUser).toBe(0);
    const fourth = await connect();
    expect(await fourth.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
  });
});

describe('session creation rate limit', () => {
  /** Sessions from one address through a trusted proxy's X-Forwarded-For, as in production behind a load balancer. */
  const proxied = { http: { host: '127.0.0.1', port: 0, trustProxy: ['127.0.0.1'] } };
  const from = (address: string) => ({ 'x-forwarded-for': address });

  it('an address opening sessions in a loop is refused with 4014 after viewers.sessionBurst, while another address still gets in; the bucket refills on the clock', async () => {
    const clock = new ManualClock(Date.now());
    const { t, connect, sessionCount } = await setup({ clock, overrides: { ...proxied, viewers: { sessionBurst: 5, sessionsPerMinute: 6 } } });
    /** Open, read one message, close: the loop the limit is for. */
    const churn = async (address: string) => {
      const p = await connect('', from(address));
      const first = await Promise.race([p.next('pixelfleetSession'), p.closed]);
      if ('type' in first) {
        p.close();
        await p.closed;
        return 'session';
      }
      return first.code;
    };
    const flood: (string | number)[] = [];
    for (let i = 0; i < 12; i++) flood.push(await churn('203.0.113.5'));
    expect(flood).toEqual([...Array<string>(5).fill('session'), ...Array<number>(7).fill(4014)]);
    expect(sessionCount()).toBe(5);
    const refused = await connect('', from('203.0.113.5'));
    expect(await refused.closed).toEqual({ code: 4014, reason: 'too many new sessions from this address' });
    // One log line for the whole run of refusals, and no request log line per upgrade.
    expect(t.logs.lines.filter((l) => l.includes('too many new sessions from its address'))).toHaveLength(1);
    expect(t.logs.lines.filter((l) => l.includes('/signalling') && (l.includes('incoming request') || l.includes('request completed')))).toEqual([]);

    expect(await churn('203.0.113.6')).toBe('session'); // someone else behind the same proxy
    expect(sessionCount()).toBe(6);

    clock.advance(9_000);
    expect(await churn('203.0.113.5')).toBe(4014);
    clock.advance(1_000); // 10 s at 6 a minute: one more session
    expect(await churn('203.0.113.5')).toBe('session');
    expect(t.logs.text()).toContain('address gets a session again after refusals over the session rate limit');
    expect(await churn('203.0.113.5')).toBe(4014);
    clock.advance(60_000);
    const refilled: (string | number)[] = [];
    for (let i = 0; i < 7; i++) refilled.push(await churn('203.0.113.5'));
    expect(refilled).toEqual([...Array<string>(5).fill('session'), 4014, 4014]); // a full bucket again, no more
  });

  it('a resume is not a new session: an address whose bucket is empty takes its own session back', async () => {
    const { t, script, connect } = await setup({ overrides: { viewers: { sessionBurst: 1, sessionsPerMinute: 1 } } });
    const player = await connect();
    const hello = await player.next('pixelfleetSession');
    const sessionId = hello.sessionId as string;
    await expect.poll(() => script.started).toEqual([sessionId]);
    script.report(sessionId, 'viewerConnected');
    await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Running');
    expect((await (await connect()).closed).code).toBe(4014);

    player.socket.terminate(); // the viewer's network drops
    await expect.poll(() => t.cp.gateway.detached).toBe(1);
    const back = await connect(`?resume=${sessionId}`);
    back.send({ type: 'pixelfleetResume', viewerToken: hello.viewerToken });
    expect(await back.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
    expect(t.cp.sessions.get(sessionId).status).toBe('Running');
  });

  it("a project's embedOrigins: the share page's own origin and the listed sites get sessions, any other site's page is closed with 4016 on a new socket and on a resume", async () => {
    const { t, script, connect, sessionCount, setEmbedOrigins } = await setup();
    await setEmbedOrigins(['https://shop.example.com']);
    const shareOrigin = new URL(t.started.publicUrls.share).origin;

    const own = await connect('', { origin: shareOrigin });
    const hello = await own.next('pixelfleetSession');
    await expect.poll(() => script.started).toEqual([hello.sessionId]);
    script.report(hello.sessionId as string, 'viewerConnected');
    await (await connect('', { origin: 'https://shop.example.com' })).next('pixelfleetSession');
    await (await connect()).next('pixelfleetSession'); // no Origin: not a browser, the list cannot bind it

    const sessionsBefore = sessionCount();
    for (const origin of ['https://evil.example', 'https://shop.example.com.evil.example', 'http://shop.example.com', 'null']) {
      expect(await (await connect('', { origin })).closed, origin).toEqual({ code: 4016, reason: 'this site may not open the stream' });
    }
    // A name the attacker points at this server (DNS rebinding): its Origin names the Host, and is still not the share page's.
    expect(await (await connect('', { origin: 'http://rebound.evil.example', host: 'rebound.evil.example' })).closed).toEqual({ code: 4016, reason: 'this site may not open the stream' });
    expect(sessionCount()).toBe(sessionsBefore);

    // A page on another site that learnt the session id and token still cannot take the stream over.
    await expect.poll(() => t.cp.sessions.get(hello.sessionId as string).status).toBe('Running');
    own.socket.terminate();
    await expect.poll(() => t.cp.gateway.detached).toBe(1);
    const thief = await connect(`?resume=${hello.sessionId as string}`, { origin: 'https://evil.example' });
    expect((await thief.closed).code).toBe(4016);
    const back = await connect(`?resume=${hello.sessionId as string}`, { origin: shareOrigin });
    back.send({ type: 'pixelfleetResume', viewerToken: hello.viewerToken });
    expect(await back.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
    // One warn line per project per minute, however many sockets were refused.
    expect(t.logs.text().split("viewer refused: its page's origin is not in the project's embedOrigins").length - 1).toBe(1);
  });

  it('viewers.sessionsPerMinute 0 turns the limit off', async () => {
    const { connect, sessionCount } = await setup({ overrides: { viewers: { sessionBurst: 1, sessionsPerMinute: 0 } } });
    for (let i = 0; i < 5; i++) {
      const p = await connect();
      await p.next('pixelfleetSession');
      p.close();
      await p.closed;
    }
    expect(sessionCount()).toBe(5);
  });
});

describe('the share page', () => {
  it('serves the viewer page with a CSP, its assets, and 404 for an unknown project', async () => {
    const { t, projectId } = await setup({ worker: false });
    const page = await fetch(`${t.started.publicUrls.share}/${projectId}`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await page.text();
    expect(html).toContain('/share/assets/player.js');
    expect(html).toContain(projectId);
    const js = await fetch(`${t.started.httpOrigin}/share/assets/player.js`);
    expect(js.status).toBe(200);
    expect(js.headers.get('content-type')).toContain('javascript');
    expect((await js.text()).length).toBeGreaterThan(10_000);
    const css = await fetch(`${t.started.httpOrigin}/share/assets/player.css`);
    expect(css.headers.get('content-type')).toContain('text/css');
    // An unknown project: the player's own page (404), whose socket is closed with 4000 and its sentence.
    const unknown = await fetch(`${t.started.publicUrls.share}/prj_unknown`);
    expect(unknown.status).toBe(404);
    expect(await unknown.text()).toContain('/share/assets/player.js');
    const player = await FakePlayer.connect(`${t.started.publicUrls.share.replace(/^http/, 'ws')}/prj_unknown/signalling`);
    expect(await player.closed).toEqual({ code: VIEWER_CLOSES.projectNotFound.code, reason: VIEWER_CLOSES.projectNotFound.reason });
  });

  it('sends the page script gzipped to a browser that takes it, whole to one that does not, and a 304 to a returning viewer', async () => {
    const { t } = await setup({ worker: false });
    const url = `${t.started.httpOrigin}/share/assets/player.js`;
    /** The raw answer: node:http, which neither asks for nor undoes an encoding. */
    const get = (headers: Record<string, string>) =>
      new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
        httpGet(url, { headers }, (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c)).on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        }).on('error', reject);
      });
    const plain = await get({});
    expect(plain.status).toBe(200);
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('accept-encoding');
    expect(plain.headers['cache-control']).toBe('no-cache');
    const zipped = await get({ 'accept-encoding': 'gzip, deflate, br, zstd' }); // Chromium's
    expect(zipped.headers['content-encoding']).toBe('gzip');
    expect(gunzipSync(zipped.body).equals(plain.body)).toBe(true);
    expect(zipped.body.length).toBeLessThan(plain.body.length / 3);
    expect(zipped.headers.etag).toBe(plain.headers.etag);
    const etag = plain.headers.etag ?? '';
    expect(etag).toMatch(/^"[\w-]{22}"$/);
    const again = await get({ 'accept-encoding': 'gzip', 'if-none-match': `W/${etag}` });
    expect(again.status).toBe(304);
    expect(again.body.length).toBe(0);
    expect((await get({ 'if-none-match': '"another"' })).status).toBe(200);
  });

  it("may be framed by any site until the project lists its embedOrigins, then by those sites and its own origin only, and names them to the page", async () => {
    const { t, projectId, setEmbedOrigins } = await setup({ worker: false });
    const open = await fetch(`${t.started.publicUrls.share}/${projectId}`);
    expect(open.headers.get('content-security-policy')).toContain('frame-ancestors *');
    expect(await open.text()).not.toContain('data-embed-origins');
    await setEmbedOrigins(['https://shop.example.com', 'https://www.example.org']);
    const listed = await fetch(`${t.started.publicUrls.share}/${projectId}`);
    expect(listed.headers.get('content-security-policy')).toContain("frame-ancestors 'self' https://shop.example.com https://www.example.org");
    expect(await listed.text()).toContain('data-embed-origins="https://shop.example.com https://www.example.org"');
  });
});
