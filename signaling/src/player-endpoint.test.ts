// PlayerEndpoint over real sockets, the client playing Epic's frontend: config first, the held
// listStreamers, subscribe, offer/answer, trickled ICE, ping/pong, our extension messages,
// hostile frames closing with code and reason, `closed` once, and the keepalive on a dead browser.
import { afterEach, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { SignallingUsageError } from './errors';
import type { ServerExtensionMessage } from './messages';
import { DEFAULT_PLAYER_RATE_LIMIT, PlayerEndpoint, UNKNOWN_STREAMER_MESSAGE, type PlayerEndpointOptions } from './player-endpoint';
import { ManualClock } from '@pixelfleet/common';
import { SignallingJournal } from './signalling-journal';
import { BROWSER_ANSWER_SDP, HOST_CANDIDATE, RELAY_CANDIDATE, UE_OFFER_SDP } from '../../test/support/signaling/fixtures';
import { nextEvent, recordEvents } from '../../test/support/signaling/next-event';
import { openSocketPair, sendJson, whenClosed, type SocketPair } from '../../test/support/signaling/socket-pair';

let pair: SocketPair<PlayerEndpoint> | undefined;

afterEach(async () => {
  await pair?.dispose();
  pair = undefined;
});

async function connect(options?: PlayerEndpointOptions, maxPayload?: number): Promise<SocketPair<PlayerEndpoint>> {
  pair = await openSocketPair((server) => new PlayerEndpoint(server, options), maxPayload === undefined ? {} : { maxPayload });
  return pair;
}

/** Connects, takes config, and subscribes to DefaultStreamer. */
async function subscribed(): Promise<SocketPair<PlayerEndpoint>> {
  const opened = await connect();
  await opened.inbox.next();
  opened.endpoint.setStreamerAvailable('DefaultStreamer');
  const done = nextEvent(opened.endpoint, 'subscribe');
  sendJson(opened.client, { type: 'subscribe', streamerId: 'DefaultStreamer' });
  await done;
  return opened;
}

const TURN = {
  iceServers: [{ urls: ['stun:turn.example.com:3478', 'turn:turn.example.com:3478?transport=udp'], username: '1780000000:s-42', credential: 'c2VjcmV0' }],
};

describe('PlayerEndpoint', () => {
  it('defers config until sendConfig, and sends it once only', async () => {
    const { endpoint, client, inbox } = await connect({ peerConnectionOptions: 'deferred' });
    // Extension messages and keepalive work before config; listStreamers is held as usual.
    endpoint.sendCustom({ type: 'pixelfleetQueue', position: 2, queueLength: 2 });
    expect(await inbox.next()).toStrictEqual({ type: 'pixelfleetQueue', position: 2, queueLength: 2 });
    sendJson(client, { type: 'listStreamers' });
    sendJson(client, { type: 'ping', time: 7 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 7 });
    endpoint.sendConfig(TURN);
    expect(await inbox.next()).toStrictEqual({ type: 'config', peerConnectionOptions: TURN, protocolVersion: '1.3.0' });
    expect(() => endpoint.sendConfig(TURN)).toThrow(SignallingUsageError);
    endpoint.setStreamerAvailable('DefaultStreamer');
    expect(await inbox.next()).toStrictEqual({ type: 'streamerList', ids: ['DefaultStreamer'] });
  });

  it('refuses a second config when it was sent on open', async () => {
    const { endpoint, inbox } = await connect();
    await inbox.next();
    expect(() => endpoint.sendConfig({})).toThrow(SignallingUsageError);
  });

  it("speaks the §1.3 player dialect as Epic's frontend sees it", async () => {
    const { endpoint, client, inbox } = await connect({ peerConnectionOptions: TURN });

    expect(await inbox.next()).toStrictEqual({ type: 'config', peerConnectionOptions: TURN, protocolVersion: '1.3.0' });

    // The frontend asks on open, before any streamer exists; a reconnect asks again.
    sendJson(client, { type: 'listStreamers' });
    sendJson(client, { type: 'listStreamers' });
    sendJson(client, { type: 'ping', time: 1780000000001 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 1780000000001 }); // the list is held

    endpoint.setStreamerAvailable('DefaultStreamer');
    expect(await inbox.next()).toStrictEqual({ type: 'streamerList', ids: ['DefaultStreamer'] });
    sendJson(client, { type: 'ping', time: 1780000000002 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 1780000000002 }); // answered once

    const subscribedTo = nextEvent(endpoint, 'subscribe');
    sendJson(client, { type: 'subscribe', streamerId: 'DefaultStreamer' });
    expect(await subscribedTo).toEqual(['DefaultStreamer']);
    expect(endpoint.subscribedStreamerId).toBe('DefaultStreamer');

    endpoint.sendOffer(UE_OFFER_SDP);
    expect(await inbox.next()).toStrictEqual({ type: 'offer', sdp: UE_OFFER_SDP });

    const answered = nextEvent(endpoint, 'answer');
    sendJson(client, { type: 'answer', sdp: BROWSER_ANSWER_SDP, minBitrateBps: 0, maxBitrateBps: 0 });
    expect(await answered).toEqual([{ sdp: BROWSER_ANSWER_SDP, minBitrateBps: 0, maxBitrateBps: 0 }]);

    endpoint.sendIceCandidate(HOST_CANDIDATE);
    expect(await inbox.next()).toStrictEqual({ type: 'iceCandidate', candidate: HOST_CANDIDATE });

    const trickled = recordEvents(endpoint, 'iceCandidate');
    sendJson(client, { type: 'iceCandidate', candidate: { ...HOST_CANDIDATE, usernameFragment: 'pL8e' } });
    sendJson(client, { type: 'iceCandidate', candidate: RELAY_CANDIDATE });
    sendJson(client, { type: 'ping', time: 1780000000123 });
    // Frames are handled in order, so the pong proves both candidates were handled.
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 1780000000123 });
    expect(trickled).toEqual([[{ ...HOST_CANDIDATE, usernameFragment: 'pL8e' }], [RELAY_CANDIDATE]]);
    expect(endpoint.isOpen).toBe(true);
  });

  it('answers listStreamers at once when a streamer is available', async () => {
    const { endpoint, client, inbox } = await connect();
    await inbox.next();
    endpoint.setStreamerAvailable('DefaultStreamer');
    sendJson(client, { type: 'listStreamers' });
    expect(await inbox.next()).toStrictEqual({ type: 'streamerList', ids: ['DefaultStreamer'] });
  });

  it('refuses a subscription to an unknown streamer with subscribeFailed', async () => {
    const { endpoint, client, inbox } = await connect();
    await inbox.next();
    const subscriptions = recordEvents(endpoint, 'subscribe');
    sendJson(client, { type: 'subscribe', streamerId: 'DefaultStreamer' }); // none available yet
    expect(await inbox.next()).toStrictEqual({ type: 'subscribeFailed', message: UNKNOWN_STREAMER_MESSAGE });
    endpoint.setStreamerAvailable('DefaultStreamer');
    sendJson(client, { type: 'subscribe', streamerId: 'OtherStreamer' });
    expect(await inbox.next()).toStrictEqual({ type: 'subscribeFailed', message: UNKNOWN_STREAMER_MESSAGE });
    expect(subscriptions).toEqual([]);
    expect(endpoint.subscribedStreamerId).toBeUndefined();
  });

  it('reports unsubscribe only for a subscribed browser', async () => {
    const { endpoint, client, inbox } = await subscribed();
    const unsubscribes = recordEvents(endpoint, 'unsubscribe');
    sendJson(client, { type: 'unsubscribe' });
    sendJson(client, { type: 'unsubscribe' });
    sendJson(client, { type: 'ping', time: 1 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 1 });
    expect(unsubscribes).toEqual([[]]);
    expect(endpoint.subscribedStreamerId).toBeUndefined();
  });

  it('tells a subscribed browser when the streamer ID changes', async () => {
    const { endpoint, inbox } = await subscribed();
    endpoint.setStreamerAvailable('DefaultStreamer1');
    expect(await inbox.next()).toStrictEqual({ type: 'streamerIdChanged', newID: 'DefaultStreamer1' });
    expect(endpoint.subscribedStreamerId).toBe('DefaultStreamer1');
  });

  it('lets the owner refuse a subscription', async () => {
    const { endpoint, inbox } = await subscribed();
    endpoint.sendSubscribeFailed('No free slot; try again later.');
    expect(await inbox.next()).toStrictEqual({ type: 'subscribeFailed', message: 'No free slot; try again later.' });
    expect(endpoint.subscribedStreamerId).toBeUndefined();
  });

  it('sends our pixelfleet extension messages and refuses other types', async () => {
    const { endpoint, inbox } = await connect();
    await inbox.next();
    endpoint.sendCustom({ type: 'pixelfleetQueue', position: 2, etaSeconds: null, tags: ['a'] });
    expect(await inbox.next()).toStrictEqual({ type: 'pixelfleetQueue', position: 2, etaSeconds: null, tags: ['a'] });
    const impostor = { type: 'offer', sdp: 'v=0' } as unknown as ServerExtensionMessage;
    expect(() => endpoint.sendCustom(impostor)).toThrow(SignallingUsageError);
    expect(() => endpoint.setStreamerAvailable('')).toThrow(expect.objectContaining({ kind: 'invalid_argument' }));
  });

  it('reports a resume request with its token, and the page\'s count of frames read when it sends one', async () => {
    const { endpoint, client, inbox } = await connect({ peerConnectionOptions: 'deferred' });
    const resumed = nextEvent(endpoint, 'resume');
    sendJson(client, { type: 'pixelfleetResume', viewerToken: 'pfv_secret' });
    expect(await resumed).toEqual(['pfv_secret', undefined]);
    endpoint.sendCustom({ type: 'pixelfleetResumed' });
    expect(await inbox.next()).toStrictEqual({ type: 'pixelfleetResumed' }); // and no config before it

    const counted = await connect({ peerConnectionOptions: 'deferred' });
    const resumedWithCount = nextEvent(counted.endpoint, 'resume');
    sendJson(counted.client, { type: 'pixelfleetResume', viewerToken: 'pfv_secret', received: 7 });
    expect(await resumedWithCount).toEqual(['pfv_secret', 7]);
  });

  it.each([-1, 1.5, '3'])('closes on a resume request whose count is %j', async (received) => {
    const { endpoint, client } = await connect({ peerConnectionOptions: 'deferred' });
    const closed = nextEvent(endpoint, 'closed');
    sendJson(client, { type: 'pixelfleetResume', viewerToken: 'pfv_secret', received });
    expect(await closed).toEqual([1008, expect.any(String)]);
  });

  it('keeps a journal once told: frames read are counted (not the resume handshake), frames written kept as sent; a replay is written as it was and not counted again', async () => {
    const { endpoint, client, inbox } = await connect({ peerConnectionOptions: 'deferred', resumeFirst: { code: 4008, reason: 'pixelfleetResume must come first' } });
    const journal = new SignallingJournal();
    endpoint.once('resume', () => endpoint.keepJournal(journal));
    const resumed = nextEvent(endpoint, 'resume');
    sendJson(client, { type: 'pixelfleetResume', viewerToken: 'pfv_secret' });
    await resumed;
    expect(journal.received).toBe(0);

    sendJson(client, { type: 'ping', time: 3 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 3 });
    expect(journal.received).toBe(1);
    endpoint.sendCustom({ type: 'pixelfleetQueue', position: 1 });
    expect(await inbox.next()).toStrictEqual({ type: 'pixelfleetQueue', position: 1 });
    expect(journal.sent).toBe(2);
    expect(journal.since(0)?.frames).toEqual(['{"type":"pong","time":3}', '{"type":"pixelfleetQueue","position":1}']);

    endpoint.replay(['{"type":"pong","time":3}']);
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 3 });
    expect(journal.sent).toBe(2);
  });

  it('answers a streamer list an earlier socket of the session owed, once the streamer is available', async () => {
    const first = await connect({ peerConnectionOptions: 'deferred' });
    sendJson(first.client, { type: 'listStreamers' });
    await expect.poll(() => first.endpoint.owesStreamerList).toBe(true);

    const second = await connect({ peerConnectionOptions: 'deferred' });
    expect(second.endpoint.owesStreamerList).toBe(false);
    second.endpoint.oweStreamerList();
    second.endpoint.setStreamerAvailable('DefaultStreamer');
    expect(await second.inbox.next()).toStrictEqual({ type: 'streamerList', ids: ['DefaultStreamer'] });
    expect(second.endpoint.owesStreamerList).toBe(false);
  });

  it('passes on a legacy browser offer and quietly ignores SFU-only messages', async () => {
    const { endpoint, client, inbox } = await subscribed();
    const offered = nextEvent(endpoint, 'offer');
    sendJson(client, { type: 'offer', sdp: BROWSER_ANSWER_SDP, minBitrateBps: 0, maxBitrateBps: 0 });
    expect(await offered).toEqual([BROWSER_ANSWER_SDP]);

    sendJson(client, { type: 'layerPreference', spatialLayer: 1, temporalLayer: 0, playerId: '' });
    sendJson(client, { type: 'dataChannelRequest' });
    sendJson(client, { type: 'peerDataChannelsReady' });
    sendJson(client, { type: 'pong', time: 5 });
    sendJson(client, { type: 'ping', time: 6 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 6 });
    expect(endpoint.isOpen).toBe(true);
  });

  it('never passes on a playerId the browser claims', async () => {
    const { endpoint, client } = await subscribed();
    const answered = nextEvent(endpoint, 'answer');
    sendJson(client, { type: 'answer', sdp: BROWSER_ANSWER_SDP, playerId: 'Player0', injected: true });
    expect(await answered).toEqual([{ sdp: BROWSER_ANSWER_SDP }]);
  });

  it('reports closed once when the browser goes away, and ignores sends afterwards', async () => {
    const { endpoint, client, server } = await subscribed();
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    client.close(1001, 'page hidden');
    await serverClosed;
    expect(closes).toEqual([[1001, 'page hidden']]);
    endpoint.sendOffer(UE_OFFER_SDP);
    endpoint.sendCustom({ type: 'pixelfleetQueue', position: 1 });
    endpoint.close(4001, 'late');
    expect(closes).toHaveLength(1);
  });

  it('closes with our code and reason, once', async () => {
    const { endpoint, server, clientClosed } = await subscribed();
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    endpoint.close(1011, 'streamer disconnected');
    endpoint.close(1000);
    expect(await clientClosed).toEqual({ code: 1011, reason: 'streamer disconnected' });
    await serverClosed;
    expect(closes).toEqual([[1011, 'streamer disconnected']]);
  });

  const hostile: [string, (client: WebSocket) => void, number, string][] = [
    ['a binary frame', (c) => c.send(new Uint8Array([0x7b, 0x7d])), 1003, 'binary frames are not accepted'],
    ['malformed JSON', (c) => c.send('{"type":"listStreamers"'), 1008, 'malformed JSON'],
    ['a JSON array', (c) => c.send('[]'), 1008, 'message is not a JSON object'],
    ['an unknown type', (c) => c.send('{"type":"hello"}'), 1008, 'unknown type "hello"'],
    ['a streamer message', (c) => c.send('{"type":"endpointId","id":"Evil"}'), 1008, 'endpointId is not allowed from a player'],
    ['a server message', (c) => c.send('{"type":"playerConnected","playerId":"P","dataChannel":true,"sfu":false}'), 1008, 'playerConnected is not allowed from a player'],
    ['a wrongly typed field', (c) => c.send('{"type":"iceCandidate","candidate":{"candidate":"c","sdpMid":0,"sdpMLineIndex":0}}'), 1008, 'invalid iceCandidate: candidate.sdpMid must be a string'],
    ['a huge SDP', (c) => c.send(JSON.stringify({ type: 'answer', sdp: 'v'.repeat(40_000) })), 1008, 'invalid answer: sdp is too long'],
    ['an oversized frame', (c) => c.send(JSON.stringify({ type: 'answer', sdp: 'v'.repeat(70_000) })), 1009, 'message exceeds 65536 bytes'],
    ['a polluting frame', (c) => c.send('{"__proto__":{"type":"subscribe"},"streamerId":"DefaultStreamer"}'), 1008, 'missing type'],
  ];

  it.each(hostile)('closes on %s with its code and reason', async (_name, send, code, reason) => {
    const { endpoint, client, server, clientClosed } = await subscribed();
    const errors = recordEvents(endpoint, 'protocolError');
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    send(client);
    expect(await clientClosed).toEqual({ code, reason });
    await serverClosed;
    expect(errors).toEqual([[reason]]);
    expect(closes).toEqual([[code, reason]]);
  });

  it('closes on invalid UTF-8, which ws itself rejects with 1007', async () => {
    const { endpoint, client, server, clientClosed } = await subscribed();
    const errors = recordEvents(endpoint, 'protocolError');
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    client.send(Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), { binary: false });
    expect((await clientClosed).code).toBe(1007);
    await serverClosed;
    expect(errors).toHaveLength(1);
    expect(closes).toEqual([[1007, '']]);
  });

  it("closes on a frame over the server's maxPayload, which ws itself rejects with 1009", async () => {
    const { endpoint, client, server, clientClosed } = await connect({}, 1024);
    const errors = recordEvents(endpoint, 'protocolError');
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    client.send(JSON.stringify({ type: 'answer', sdp: 'v'.repeat(2048) }));
    expect((await clientClosed).code).toBe(1009);
    await serverClosed;
    expect(errors).toEqual([['Max payload size exceeded']]);
    expect(closes).toEqual([[1009, '']]);
  });

  it('keeps alive by default and ends a dead browser on the injected timers', async () => {
    const first = await connect();
    expect(first.server.listenerCount('pong')).toBe(1);
    await first.dispose();

    const clock = new ManualClock();
    const { endpoint, client, clientClosed } = await connect({ keepalive: { clock } });
    const closes = recordEvents(endpoint, 'closed');
    client.pause(); // the tab froze: nothing read, nothing answered
    clock.advance(15_000);
    clock.advance(9_999);
    expect(closes).toEqual([]);
    clock.advance(1);
    expect(closes).toEqual([[1006, 'keepalive timeout']]);
    client.resume();
    expect((await clientClosed).code).toBe(1006);
    expect(closes).toHaveLength(1);
    expect(clock.pending).toBe(0);
  });

  it('can run without a keepalive', async () => {
    const { server } = await connect({ keepalive: false });
    expect(server.listenerCount('pong')).toBe(0);
  });

  it('drops a browser that never reads even though it sends pongs of its own', async () => {
    const clock = new ManualClock();
    const { endpoint, client, server, clientClosed } = await connect({ keepalive: { clock } });
    const closes = recordEvents(endpoint, 'closed');
    client.pause(); // reads nothing, so it never sees our ping
    clock.advance(15_000);
    const ponged = new Promise((resolve) => server.once('pong', resolve));
    client.pong(); // unsolicited: it answers nothing
    await ponged;
    clock.advance(10_000);
    expect(closes).toEqual([[1006, 'keepalive timeout']]);
    client.resume();
    expect((await clientClosed).code).toBe(1006);
  });
});

describe('PlayerEndpoint limits', () => {
  it('takes DEFAULT_PLAYER_RATE_LIMIT by default: 200 messages at once, then 50 a second', () => {
    expect(DEFAULT_PLAYER_RATE_LIMIT).toEqual({ burst: 200, perSecond: 50 });
  });

  it("closes a browser that sends faster than its rate limit with 1008 'too many messages'", async () => {
    const clock = new ManualClock(); // time stands still unless the test moves it
    const { endpoint, client, inbox, server, clientClosed } = await connect({ clock });
    await inbox.next();
    const errors = recordEvents(endpoint, 'protocolError');
    const closes = recordEvents(endpoint, 'closed');
    for (let i = 0; i < 200; i++) sendJson(client, { type: 'ping', time: i });
    for (let i = 0; i < 200; i++) expect(await inbox.next()).toStrictEqual({ type: 'pong', time: i });
    clock.advance(1_000); // 50 more
    for (let i = 0; i < 51; i++) sendJson(client, { type: 'ping', time: i });
    for (let i = 0; i < 50; i++) expect(await inbox.next()).toStrictEqual({ type: 'pong', time: i });
    const serverClosed = whenClosed(server);
    expect(await clientClosed).toEqual({ code: 1008, reason: 'too many messages' });
    await serverClosed;
    expect(inbox.queued).toBe(0); // the 251st ping went unanswered
    expect(errors).toEqual([['too many messages']]);
    expect(closes).toEqual([[1008, 'too many messages']]);
  });

  it('a browser flooding answered requests without reading is closed by the rate limit', async () => {
    const { endpoint, client, server, clientClosed } = await connect();
    const closed = nextEvent(endpoint, 'closed');
    client.pause();
    // Each refused subscribe is answered with a longer subscribeFailed: the reproduced memory attack.
    for (let i = 0; i < 1_000; i++) sendJson(client, { type: 'subscribe', streamerId: 'NoSuchStreamer' });
    expect(await closed).toEqual([1008, 'too many messages']);
    expect(server.readyState).not.toBe(server.OPEN);
    client.resume();
    expect(await clientClosed).toEqual({ code: 1008, reason: 'too many messages' });
  });

  it("terminates a browser whose unsent data passes maxBufferedBytes, reported as 1008 'not reading: too much unsent data'", async () => {
    const { endpoint, client, inbox, server, clientClosed } = await connect({ maxBufferedBytes: 64 * 1024 });
    await inbox.next();
    const closed = nextEvent(endpoint, 'closed');
    client.pause();
    const message = { type: 'pixelfleetQueue', position: 1, padding: 'x'.repeat(4096) } as const;
    let sent = 0;
    // The kernel's socket buffers take some MiB first; after that every byte waits in our memory.
    while (endpoint.isOpen && sent < 20_000) {
      endpoint.sendCustom(message);
      sent += 1;
    }
    expect(endpoint.isOpen).toBe(false);
    expect(server.bufferedAmount).toBeLessThan(64 * 1024 + 2 * 4096); // the bound, plus at most one message
    expect(await closed).toEqual([1008, 'not reading: too much unsent data']);
    expect(server.readyState).toBe(server.CLOSED);
    endpoint.sendCustom(message); // a no-op now
    client.resume();
    expect((await clientClosed).code).toBe(1006); // terminated: a close frame would have waited behind the backlog
  });

  it('with no rate limit, a browser flooding requests without reading is still dropped by the unsent-data bound', async () => {
    const { endpoint, client, clientClosed } = await connect({ rateLimit: false, maxBufferedBytes: 16 * 1024 });
    const closed = nextEvent(endpoint, 'closed');
    client.pause();
    let flooding = true;
    const flood = () => {
      if (!flooding || client.readyState !== client.OPEN) return;
      for (let i = 0; i < 2_000; i++) sendJson(client, { type: 'subscribe', streamerId: 'NoSuchStreamer' });
      setImmediate(flood);
    };
    flood();
    expect(await closed).toEqual([1008, 'not reading: too much unsent data']);
    flooding = false;
    client.resume();
    expect((await clientClosed).code).toBe(1006);
  });

  it('on a resuming socket, accepts pixelfleetResume first and then behaves as usual', async () => {
    const { endpoint, client, inbox } = await connect({ peerConnectionOptions: 'deferred', resumeFirst: { code: 4008, reason: 'pixelfleetResume must come first' } });
    const resumed = nextEvent(endpoint, 'resume');
    sendJson(client, { type: 'pixelfleetResume', viewerToken: 'pfv_secret' });
    expect(await resumed).toEqual(['pfv_secret', undefined]);
    sendJson(client, { type: 'ping', time: 3 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 3 });
  });

  it.each([
    ['ping', { type: 'ping', time: 1 }],
    ['listStreamers', { type: 'listStreamers' }],
    ['subscribe', { type: 'subscribe', streamerId: 'DefaultStreamer' }],
  ])('on a resuming socket, closes on %s before pixelfleetResume with the given code and reason, unanswered', async (type, message) => {
    const { endpoint, client, inbox, server, clientClosed } = await connect({ peerConnectionOptions: 'deferred', resumeFirst: { code: 4008, reason: 'pixelfleetResume must come first' } });
    endpoint.setStreamerAvailable('DefaultStreamer');
    const errors = recordEvents(endpoint, 'protocolError');
    const closes = recordEvents(endpoint, 'closed');
    const resumes = recordEvents(endpoint, 'resume');
    const serverClosed = whenClosed(server);
    sendJson(client, message);
    sendJson(client, { type: 'pixelfleetResume', viewerToken: 'pfv_late' });
    expect(await clientClosed).toEqual({ code: 4008, reason: 'pixelfleetResume must come first' });
    await serverClosed;
    expect(inbox.queued).toBe(0);
    expect(errors).toEqual([[`${type} before pixelfleetResume on a resuming socket`]]);
    expect(closes).toEqual([[4008, 'pixelfleetResume must come first']]);
    expect(resumes).toEqual([]);
  });

  it('refuses a resumeFirst close code that cannot be sent', async () => {
    const raw = await openSocketPair((socket) => socket);
    try {
      expect(() => new PlayerEndpoint(raw.server, { resumeFirst: { code: 1006, reason: 'x' } })).toThrow(SignallingUsageError);
    } finally {
      await raw.dispose();
    }
  });
});
