// A short signalling drop does not kill a healthy stream (architecture §2): a Running or Starting session
// whose viewer socket vanishes is held for viewers.resumeGraceSeconds, and the page's token takes
// it back over a new socket. Real gateway, scheduler and agent link; the relay is scripted; the
// grace runs on the injected clock.
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_ICE_CANDIDATES_PER_SESSION } from '@pixelfleet/control-plane/test-support';
import { VIEWER_CLOSES } from '@pixelfleet/signaling';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane } from '../support/control-plane';
import { startStreamingProject } from '../support/streaming-project';
import { FakePlayer } from '../support/fake-player';
import { statusHistory } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

const GRACE_S = 30;

async function setup(options: { resumeGraceSeconds?: number; maxPerAddress?: number; agentClock?: ManualClock } = {}) {
  const clock = new ManualClock(Date.now());
  const viewers = { resumeGraceSeconds: options.resumeGraceSeconds ?? GRACE_S, ...(options.maxPerAddress === undefined ? {} : { maxPerAddress: options.maxPerAddress }) };
  const t = await startTestControlPlane({ clock, overrides: { viewers } });
  cleanups.push(() => t.destroy());
  const { script, wsUrl } = await startStreamingProject(t, cleanups, 'Resume', options.agentClock ? { clock: options.agentClock } : {});
  const connect = async (query = '') => {
    const p = await FakePlayer.connect(`${wsUrl}${query}`);
    cleanups.push(() => p.socket.terminate());
    return p;
  };
  const status = (sessionId: string) => t.cp.sessions.get(sessionId).status;
  const gateway = () => t.cp.gateway;

  /** A viewer whose session was placed (Starting) and whose page asked for the streamer list. */
  const placed = async () => {
    const player = await connect();
    player.send({ type: 'listStreamers' });
    const hello = await player.next('pixelfleetSession');
    const sessionId = hello.sessionId as string;
    await expect.poll(() => script.started).toContain(sessionId);
    return { player, sessionId, hello };
  };

  /** A viewer whose session reached Running. */
  const streaming = async () => {
    const { player, sessionId, hello } = await placed();
    script.signal(sessionId, { type: 'config', peerConnectionOptions: {} });
    await player.next('config');
    script.report(sessionId, 'appIdentified', { streamingId: 'streamer_r' });
    await player.next('streamerList');
    player.send({ type: 'subscribe', streamerId: 'streamer_r' });
    script.report(sessionId, 'viewerConnected');
    await expect.poll(() => status(sessionId)).toBe('Running');
    return { player, sessionId, viewerToken: hello.viewerToken as string, hello };
  };

  /** The socket dies without a close frame, as when the viewer's network goes away. */
  const drop = async (player: FakePlayer) => {
    const detachedBefore = gateway().detached;
    player.socket.terminate();
    await expect.poll(() => gateway().detached).toBe(detachedBefore + 1);
  };

  const resume = async (sessionId: string, viewerToken: string) => {
    const player = await connect(`?resume=${sessionId}`);
    player.send({ type: 'pixelfleetResume', viewerToken });
    return player;
  };

  /** The control plane started again (after t.stop()) on the same data dir, ports, clock and config. */
  const restart = async () => {
    const again = await startTestControlPlane({
      dataDir: t.dataDir,
      grpcPort: t.started.grpcPort,
      clock,
      logs: t.logs,
      overrides: { http: { host: '127.0.0.1', port: t.started.httpPort }, viewers },
    });
    cleanups.push(() => again.stop());
    return again;
  };

  return { t, clock, script, connect, status, gateway, placed, streaming, drop, resume, restart };
}

describe('resuming a dropped viewer socket', () => {
  it('a held session does not count against its own resume under viewers.maxPerAddress', async () => {
    const { status, streaming, drop, resume, connect } = await setup({ maxPerAddress: 1 });
    const { player, sessionId, viewerToken } = await streaming();
    await drop(player);
    expect((await (await connect()).closed).code).toBe(4010); // the held session still takes the address's one place
    const back = await resume(sessionId, viewerToken);
    await back.next('pixelfleetResumed');
    expect(status(sessionId)).toBe('Running');
  });

  it('keeps a Running session through a drop; the token takes it back and signalling carries on', async () => {
    const { t, script, status, gateway, streaming, drop, resume } = await setup();
    const { player, sessionId, viewerToken, hello } = await streaming();
    expect(hello.resumeWindowSeconds).toBe(GRACE_S);

    await drop(player);
    expect(status(sessionId)).toBe('Running');
    expect(script.stopped).toEqual([]);

    const again = await resume(sessionId, viewerToken);
    expect(await again.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
    expect(gateway().detached).toBe(0);
    // The page keeps its peer connection: nothing that would make Epic's frontend build a new one.
    const candidate = { candidate: 'candidate:9 1 udp 1 127.0.0.1 50009 typ host', sdpMid: '0', sdpMLineIndex: 0 };
    script.signal(sessionId, { type: 'iceCandidate', candidate });
    expect(await again.next('iceCandidate')).toEqual({ type: 'iceCandidate', candidate });
    expect(again.received.map((m) => m.type)).toEqual(['pixelfleetResumed', 'iceCandidate']);
    again.send({ type: 'iceCandidate', candidate });
    await expect.poll(() => script.signals.filter((s) => s.sessionId === sessionId && s.json.includes('50009')).length).toBe(1);
    again.send({ type: 'ping', time: 7 });
    expect(await again.next('pong')).toEqual({ type: 'pong', time: 7 });

    expect(statusHistory(t.cp, sessionId)).toEqual(['Enqueued', 'Starting', 'Running']);

    // Leaving on purpose still ends the session at once.
    again.close();
    await expect.poll(() => status(sessionId)).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    expect(script.stopped).toEqual([sessionId]);
  });

  it('ends the session as the viewer having left when the grace runs out, and tells a late page so', async () => {
    const { t, clock, script, status, gateway, streaming, drop, resume } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    await drop(player);
    clock.advance(GRACE_S * 1000 - 1);
    expect(status(sessionId)).toBe('Running');
    clock.advance(1);
    expect(status(sessionId)).toBe('Terminating');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    expect(gateway().detached).toBe(0);
    await expect.poll(() => script.stopped).toEqual([sessionId]);

    const late = await resume(sessionId, viewerToken);
    expect(await late.closed).toEqual({ code: 1000, reason: 'viewer left' });
  });

  it('a session that ends while its viewer is away tells the resuming page why', async () => {
    const { script, status, streaming, drop, resume } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    await drop(player);
    script.crash(sessionId);
    await expect.poll(() => status(sessionId)).toBe('Terminated');
    const again = await resume(sessionId, viewerToken);
    expect(await again.closed).toEqual({ code: 4006, reason: 'app closed or crashed' });
  });

  it('refuses a wrong token without disturbing the held session', async () => {
    const { status, gateway, streaming, drop, resume } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    await drop(player);

    const impostor = await resume(sessionId, `${viewerToken.slice(0, -1)}x`);
    expect(await impostor.closed).toEqual({ code: 4008, reason: 'session cannot be resumed' });
    const unknown = await resume('session_1_2', viewerToken);
    expect(await unknown.closed).toEqual({ code: 4008, reason: 'session cannot be resumed' });
    expect(status(sessionId)).toBe('Running');
    expect(gateway().detached).toBe(1);

    const owner = await resume(sessionId, viewerToken);
    expect(await owner.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
  });

  it('the page may resume before the server noticed the drop: the token holder replaces the old socket', async () => {
    const { script, status, gateway, streaming, resume } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    const again = await resume(sessionId, viewerToken);
    expect(await again.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
    expect(await player.closed).toEqual({ code: 4008, reason: 'replaced by a resumed connection' });
    expect(status(sessionId)).toBe('Running');
    expect(gateway().detached).toBe(0);
    expect(script.stopped).toEqual([]);
  });

  it('a page that gave its socket up as silent (4009) is held like a drop; a deliberate close is not', async () => {
    const { status, gateway, streaming, resume } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    player.socket.close(VIEWER_CLOSES.resuming.code, VIEWER_CLOSES.resuming.reason);
    await expect.poll(() => gateway().detached).toBe(1);
    expect(status(sessionId)).toBe('Running');
    const again = await resume(sessionId, viewerToken);
    expect(await again.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
    again.socket.close(1001, 'going away');
    await expect.poll(() => status(sessionId)).toBe('Terminated');
    expect(gateway().detached).toBe(0);
  });

  it('a control plane restart is invisible to a viewer who is watching: closed with 1012, resumed on the next run, nothing stopped; a queued viewer gets its place back', async () => {
    const { t, clock, script, streaming, connect, resume, restart } = await setup({ maxPerAddress: 2 });
    const watching = await streaming();
    const queued = await connect();
    const q = await queued.next('pixelfleetSession');
    expect(await queued.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
    await t.stop();
    expect(await watching.player.closed).toEqual({ code: 1012, reason: 'service restarting' });
    expect(await queued.closed).toEqual({ code: 1012, reason: 'service restarting' });
    expect(script.stopped).toEqual([]);

    const again = await restart();
    await expect.poll(() => again.cp.registry.placeable('europe').length).toBe(1);
    const back = await resume(watching.sessionId, watching.viewerToken);
    await back.next('pixelfleetResumed');
    const queuedBack = await resume(q.sessionId as string, q.viewerToken as string);
    await queuedBack.next('pixelfleetResumed');
    expect(await queuedBack.next('pixelfleetQueue')).toEqual({ type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: false });
    // The resumed sessions count against their address again (its limit is 2 here).
    const third = await connect();
    expect(await third.closed).toEqual({ code: 4010, reason: 'too many viewer connections from this address' });
    clock.advance(GRACE_S * 1000); // past the grace: both came back in time
    expect(again.cp.sessions.get(watching.sessionId).status).toBe('Running');
    expect(again.cp.sessions.get(q.sessionId as string).status).toBe('Enqueued');
    expect(script.stopped).toEqual([]);
    // The jump also passed the worker's 30 s lease (its agent heartbeats on the real clock, every
    // 10 s): it is placeable again at its next heartbeat, as after any silence that long.
    await expect.poll(() => again.cp.registry.placeable('europe').length, { timeout: 15_000 }).toBe(1);
    // The resumed socket is the session's: the viewer leaving ends it and frees the slot for the next in line.
    back.close();
    await expect.poll(() => again.cp.sessions.get(watching.sessionId).endReason).toBe('viewer left');
    expect(await queuedBack.next('pixelfleetStatus')).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
  });

  it('a restart while a session is Starting: what its agent says while the control plane is down reaches the page that resumes on the next run, which lists the app again and subscribes', async () => {
    const { t, script, placed, resume, restart } = await setup();
    const { player, sessionId, hello } = await placed();
    script.signal(sessionId, { type: 'config', peerConnectionOptions: {} });
    await player.next('config');
    await t.stop();
    expect(await player.closed).toEqual({ code: 1012, reason: 'service restarting' });
    await expect.poll(() => script.agent!.link.linkState).not.toBe('connected');
    // While the control plane is down the app identifies and the relay offers: the agent holds both.
    script.report(sessionId, 'appIdentified', { streamingId: 'streamer_s' });
    script.signal(sessionId, { type: 'offer', sdp: 'v=0\r\n' });
    expect(script.agent!.link.heldMessages).toBe(2);

    const again = await restart();
    // The agent is back (and has sent what it held) before the page: the next run keeps both for it.
    await expect.poll(() => script.agent!.link.heldMessages).toBe(0);
    await expect.poll(() => again.logs.lines.some((l) => l.includes('relay signal held for a viewer who is away'))).toBe(true);
    const back = await resume(sessionId, hello.viewerToken as string);
    await back.next('pixelfleetResumed');
    expect(await back.next('pixelfleetStatus')).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
    expect(await back.next('offer')).toMatchObject({ type: 'offer', sdp: 'v=0\r\n' });
    // The page never had its streamer list: it asks again, as Epic's protocol does, and subscribes.
    back.send({ type: 'listStreamers' });
    expect(await back.next('streamerList')).toEqual({ type: 'streamerList', ids: ['streamer_s'] });
    back.send({ type: 'subscribe', streamerId: 'streamer_s' });
    await expect.poll(() => script.signals.map((x) => JSON.parse(x.json) as { type: string }).filter((m) => m.type === 'subscribe')).toHaveLength(1);
    script.report(sessionId, 'viewerConnected');
    await expect.poll(() => again.cp.sessions.get(sessionId).status).toBe('Running');
  });

  it('a restart while a session is Starting: the answer and candidates of a page back before its agent wait for the agent and reach it in order', async () => {
    // The agent redials on its own clock: it stays away until the test lets it back.
    const agentClock = new ManualClock(Date.now());
    const { t, script, placed, resume, restart } = await setup({ agentClock });
    const { player, sessionId, hello } = await placed();
    script.report(sessionId, 'appIdentified', { streamingId: 'streamer_a' });
    await player.next('streamerList');
    player.send({ type: 'subscribe', streamerId: 'streamer_a' });
    await expect.poll(() => script.signals.length).toBe(1);
    script.signal(sessionId, { type: 'offer', sdp: 'v=0\r\n' });
    await player.next('offer');
    await t.stop();
    expect(await player.closed).toEqual({ code: 1012, reason: 'service restarting' });
    await expect.poll(() => script.agent!.link.linkState).toBe('waiting');

    const again = await restart();
    const back = await resume(sessionId, hello.viewerToken as string);
    await back.next('pixelfleetResumed');
    // What the page's library sent while away follows the resume: its answer and a candidate.
    back.send({ type: 'answer', sdp: 'v=0\r\na=answer\r\n' });
    back.send({ type: 'iceCandidate', candidate: { candidate: 'candidate:1 1 udp 1 127.0.0.1 5000 typ host', sdpMid: '0', sdpMLineIndex: 0 } });
    expect(await back.next('pixelfleetStatus')).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
    const pingTime = Date.now();
    back.send({ type: 'ping', time: pingTime });
    await back.next('pong'); // both were read by the gateway
    expect(script.signals).toHaveLength(1);

    agentClock.advance(1_000); // past the redial wait
    await expect.poll(() => script.signals.map((x) => (JSON.parse(x.json) as { type: string }).type)).toEqual(['subscribe', 'answer', 'iceCandidate']);
    script.report(sessionId, 'viewerConnected');
    await expect.poll(() => again.cp.sessions.get(sessionId).status).toBe('Running');
  });

  it('a page that keeps count gets again, in order and as first sent, what its dying socket lost, then what was held; the server says how many of its frames it read', async () => {
    const { t, script, streaming, drop, connect } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    const first = player.received.slice();
    await drop(player);
    const candidate = { candidate: 'candidate:7 1 udp 1 127.0.0.1 50007 typ host', sdpMid: '0', sdpMLineIndex: 0 };
    script.signal(sessionId, { type: 'iceCandidate', candidate });
    await expect.poll(() => t.logs.lines.some((l) => l.includes('relay signal held for a viewer who is away'))).toBe(true);

    // The page read all but the last two frames of its first socket (they died with it).
    const back = await connect(`?resume=${sessionId}`);
    back.send({ type: 'pixelfleetResume', viewerToken, received: first.length - 2 });
    // It read listStreamers and subscribe: the page need send nothing again.
    expect(await back.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed', received: 2 });
    await expect.poll(() => back.received.length).toBe(4);
    expect(back.received.slice(1)).toEqual([...first.slice(-2), { type: 'iceCandidate', candidate }]);
    expect(t.logs.lines.find((l) => l.includes('viewer signalling resumed'))).toContain('"replayedFrames":2');

    // The count carries on across sockets: a ping later, a second drop with nothing lost replays nothing.
    back.send({ type: 'ping', time: 5 });
    await back.next('pong');
    await drop(back);
    const third = await connect(`?resume=${sessionId}`);
    third.send({ type: 'pixelfleetResume', viewerToken, received: first.length + 2 });
    expect(await third.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed', received: 3 });
    third.send({ type: 'ping', time: 6 });
    await third.next('pong');
    expect(third.received.map((m) => m.type)).toEqual(['pixelfleetResumed', 'pong']);
  });

  it('a count the session cannot have given is no count: the answer carries none, both count afresh, and a warning says so', async () => {
    const { t, streaming, drop, connect } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    await drop(player);
    const back = await connect(`?resume=${sessionId}`);
    back.send({ type: 'pixelfleetResume', viewerToken, received: player.received.length + 1 });
    expect(await back.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
    expect(t.logs.lines.some((l) => l.includes('the page counts more frames than this session sent'))).toBe(true);
    back.send({ type: 'ping', time: 1 });
    await back.next('pong');
    await drop(back);
    // Counted from the resume on: the page read one frame (the pong), the server one (the ping).
    const third = await connect(`?resume=${sessionId}`);
    third.send({ type: 'pixelfleetResume', viewerToken, received: 1 });
    expect(await third.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed', received: 1 });
  });

  it("a drop while the page's listStreamers waits for the app: the resumed socket answers it when the app identifies, without the page asking again", async () => {
    const { script, placed, drop, connect } = await setup();
    const { player, sessionId, hello } = await placed();
    await drop(player);
    const back = await connect(`?resume=${sessionId}`);
    back.send({ type: 'pixelfleetResume', viewerToken: hello.viewerToken, received: player.received.length });
    expect(await back.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed', received: 1 });
    script.report(sessionId, 'appIdentified', { streamingId: 'streamer_w' });
    expect(await back.next('streamerList')).toEqual({ type: 'streamerList', ids: ['streamer_w'] });
  });

  it('the page and the server agree on the refusal code', () => {
    expect(VIEWER_CLOSES.resumeRefused).toEqual({ code: 4008, reason: 'session cannot be resumed', sentence: 'The connection to the server was lost.' });
  });

  it('a drop while Starting holds the session: the offer its relay makes meanwhile reaches the resumed page, which lists the app again, subscribes and streams', async () => {
    const { t, script, placed, drop, resume, status } = await setup();
    const { player, sessionId, hello } = await placed();
    script.signal(sessionId, { type: 'config', peerConnectionOptions: {} });
    await player.next('config');
    await drop(player);
    expect(status(sessionId)).toBe('Starting');
    // While the page is away the app identifies and the relay offers: the gateway keeps both for it.
    script.report(sessionId, 'appIdentified', { streamingId: 'streamer_d' });
    script.signal(sessionId, { type: 'offer', sdp: 'v=0\r\n' });
    await expect.poll(() => t.logs.lines.some((l) => l.includes('relay signal held for a viewer who is away'))).toBe(true);
    const back = await resume(sessionId, hello.viewerToken as string);
    await back.next('pixelfleetResumed');
    expect(await back.next('pixelfleetStatus')).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
    expect(await back.next('offer')).toMatchObject({ type: 'offer', sdp: 'v=0\r\n' });
    back.send({ type: 'listStreamers' });
    expect(await back.next('streamerList')).toEqual({ type: 'streamerList', ids: ['streamer_d'] });
    back.send({ type: 'subscribe', streamerId: 'streamer_d' });
    await expect.poll(() => script.signals.map((x) => JSON.parse(x.json) as { type: string }).filter((m) => m.type === 'subscribe')).toHaveLength(1);
    script.report(sessionId, 'viewerConnected');
    await expect.poll(() => status(sessionId)).toBe('Running');
    expect(statusHistory(t.cp, sessionId)).toEqual(['Enqueued', 'Starting', 'Running']);
  });

  it('a drop while Starting that never resumes ends the session as viewer left when the grace runs out', async () => {
    const { t, clock, placed, drop, status, gateway } = await setup();
    const { player, sessionId } = await placed();
    await drop(player);
    expect(gateway().detached).toBe(1);
    clock.advance(GRACE_S * 1000 - 1);
    expect(status(sessionId)).toBe('Starting');
    clock.advance(1);
    await expect.poll(() => status(sessionId)).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
  });

  it('resumeGraceSeconds 0 ends a Running session on a drop, as before', async () => {
    const { t, status, gateway, streaming } = await setup({ resumeGraceSeconds: 0 });
    const { player, sessionId, hello } = await streaming();
    expect(hello.resumeWindowSeconds).toBe(0);
    player.socket.terminate();
    await expect.poll(() => status(sessionId)).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    expect(gateway().detached).toBe(0);
  });

  it('a resuming socket must send its token first, and soon', async () => {
    const { t, clock, status, gateway, streaming, drop, resume, connect } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    await drop(player);

    // Epic's frontend would send listStreamers on open; a flood would start with ping or subscribe.
    // Each is refused at once, unanswered, and the token sent after it comes too late.
    for (const first of [{ type: 'listStreamers' }, { type: 'ping', time: 1 }, { type: 'subscribe', streamerId: 'streamer_r' }]) {
      const chatty = await connect(`?resume=${sessionId}`);
      chatty.send(first);
      chatty.send({ type: 'pixelfleetResume', viewerToken });
      expect(await chatty.closed).toEqual({ code: 4008, reason: 'the first message must be pixelfleetResume' });
      expect(chatty.received).toEqual([]);
    }
    expect(t.logs.text()).toContain('ping before pixelfleetResume on a resuming socket');
    // Whatever project id the URL names: nothing is answered before the token.
    const elsewhere = await FakePlayer.connect(`${t.started.publicUrls.share.replace(/^http/, 'ws')}/prj_nope/signalling?resume=${sessionId}`);
    cleanups.push(() => elsewhere.socket.terminate());
    elsewhere.send({ type: 'ping', time: 2 });
    expect(await elsewhere.closed).toEqual({ code: 4008, reason: 'the first message must be pixelfleetResume' });
    expect(elsewhere.received).toEqual([]);
    expect(status(sessionId)).toBe('Running');
    expect(gateway().detached).toBe(1);

    const silent = await connect(`?resume=${sessionId}`);
    clock.advance(10_000);
    expect(await silent.closed).toEqual({ code: 4008, reason: 'no resume request' });

    const malformed = await resume('not-a-session', 'pfv_x');
    expect(await malformed.closed).toEqual({ code: 4008, reason: 'session cannot be resumed' });

    const owner = await resume(sessionId, viewerToken);
    expect(await owner.next('pixelfleetResumed')).toEqual({ type: 'pixelfleetResumed' });
  });

  it("the cap on a session's ICE candidates spans its resumed sockets", async () => {
    const { t, script, status, streaming, drop, resume } = await setup();
    const { player, sessionId, viewerToken } = await streaming();
    const relayed = () => script.signals.filter((s) => s.sessionId === sessionId && s.json.includes('"iceCandidate"')).length;
    const candidate = (i: number) => ({ candidate: `candidate:${i} 1 udp 1 127.0.0.1 ${40_000 + i} typ host`, sdpMid: '0', sdpMLineIndex: 0 });
    for (let i = 0; i < MAX_ICE_CANDIDATES_PER_SESSION - 1; i++) player.send({ type: 'iceCandidate', candidate: candidate(i) });
    await expect.poll(relayed).toBe(MAX_ICE_CANDIDATES_PER_SESSION - 1);
    await drop(player);

    const again = await resume(sessionId, viewerToken);
    await again.next('pixelfleetResumed');
    again.send({ type: 'iceCandidate', candidate: candidate(100) });
    again.send({ type: 'iceCandidate', candidate: candidate(101) });
    expect(await again.closed).toEqual({ code: 1008, reason: 'too many ICE candidates' });
    await expect.poll(() => status(sessionId)).toBe('Terminated');
    expect(t.cp.sessions.get(sessionId).endReason).toBe('viewer left');
    // The agent heard the stop after every signal sent before it: the 65th candidate was never sent.
    await expect.poll(() => script.stopped).toEqual([sessionId]);
    expect(relayed()).toBe(MAX_ICE_CANDIDATES_PER_SESSION);
  });

  it('a resume message on a socket that is already attached is refused as a protocol violation', async () => {
    const { streaming } = await setup();
    const { player, viewerToken } = await streaming();
    player.send({ type: 'pixelfleetResume', viewerToken });
    expect(await player.closed).toEqual({ code: 1008, reason: 'pixelfleetResume is only accepted first on a resuming socket' });
  });
});
