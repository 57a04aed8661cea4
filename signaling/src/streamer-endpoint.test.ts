// StreamerEndpoint over real sockets, the client playing the Unreal app: the Wilbur 5.5 handshake
// as UE sees it, routing by playerId, hostile frames closing with code and reason, `closed` once.
import { afterEach, describe, expect, it } from 'vitest';
import type { WebSocket } from 'ws';
import { SignallingUsageError } from './errors';
import { ManualClock } from '@pixelfleet/common';
import { StreamerEndpoint, type StreamerEndpointOptions } from './streamer-endpoint';
import { BROWSER_ANSWER_SDP, HOST_CANDIDATE, RELAY_CANDIDATE, UE_OFFER_SDP } from '../../test/support/signaling/fixtures';
import { nextEvent, recordEvents } from '../../test/support/signaling/next-event';
import { openSocketPair, sendJson, whenClosed, type SocketPair } from '../../test/support/signaling/socket-pair';

let pair: SocketPair<StreamerEndpoint> | undefined;

afterEach(async () => {
  await pair?.dispose();
  pair = undefined;
});

async function connect(options?: StreamerEndpointOptions): Promise<SocketPair<StreamerEndpoint>> {
  pair = await openSocketPair((server) => new StreamerEndpoint(server, options));
  return pair;
}

/** Connects and completes config → identify → endpointId → endpointIdConfirm. */
async function identified(options?: StreamerEndpointOptions): Promise<SocketPair<StreamerEndpoint>> {
  const opened = await connect(options);
  await opened.inbox.next();
  await opened.inbox.next();
  const done = nextEvent(opened.endpoint, 'identified');
  sendJson(opened.client, { type: 'endpointId', id: 'DefaultStreamer' });
  await done;
  await opened.inbox.next();
  return opened;
}

describe('StreamerEndpoint', () => {
  it('runs the Wilbur 5.5 session as the Unreal app sees it', async () => {
    const { endpoint, client, inbox } = await connect();

    expect(await inbox.next()).toStrictEqual({ type: 'config', peerConnectionOptions: {}, protocolVersion: '1.3.0' });
    expect(await inbox.next()).toStrictEqual({ type: 'identify' });

    const identifiedAs = nextEvent(endpoint, 'identified');
    sendJson(client, { type: 'endpointId', id: 'DefaultStreamer' });
    expect(await identifiedAs).toEqual(['DefaultStreamer']);
    expect(endpoint.streamerId).toBe('DefaultStreamer');
    expect(await inbox.next()).toStrictEqual({ type: 'endpointIdConfirm', committedId: 'DefaultStreamer' });

    expect(endpoint.hasPlayer('Player0')).toBe(false);
    endpoint.connectPlayer('Player0');
    expect(await inbox.next()).toStrictEqual({ type: 'playerConnected', playerId: 'Player0', dataChannel: true, sfu: false });
    expect(endpoint.hasPlayer('Player0')).toBe(true);

    const offered = nextEvent(endpoint, 'offer');
    sendJson(client, { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP });
    expect(await offered).toEqual(['Player0', UE_OFFER_SDP]);

    endpoint.sendAnswer('Player0', BROWSER_ANSWER_SDP);
    expect(await inbox.next()).toStrictEqual({ type: 'answer', sdp: BROWSER_ANSWER_SDP, playerId: 'Player0' });

    const candidate = nextEvent(endpoint, 'iceCandidate');
    sendJson(client, { type: 'iceCandidate', playerId: 'Player0', candidate: HOST_CANDIDATE });
    expect(await candidate).toEqual(['Player0', HOST_CANDIDATE]);

    endpoint.sendIceCandidate('Player0', RELAY_CANDIDATE);
    expect(await inbox.next()).toStrictEqual({ type: 'iceCandidate', candidate: RELAY_CANDIDATE, playerId: 'Player0' });

    sendJson(client, { type: 'ping', time: 1780000000 });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 1780000000 });

    const dropRequest = nextEvent(endpoint, 'disconnectPlayer');
    sendJson(client, { type: 'disconnectPlayer', playerId: 'Player0', reason: 'AFK' });
    expect(await dropRequest).toEqual(['Player0', 'AFK']);

    endpoint.disconnectPlayer('Player0');
    expect(await inbox.next()).toStrictEqual({ type: 'playerDisconnected', playerId: 'Player0' });
    expect(endpoint.hasPlayer('Player0')).toBe(false);
    expect(endpoint.isOpen).toBe(true);
  });

  it('puts the configured peerConnectionOptions in config', async () => {
    const peerConnectionOptions = { iceServers: [{ urls: ['stun:stun.example.com:3478'] }] };
    const { inbox } = await connect({ peerConnectionOptions });
    expect(await inbox.next()).toStrictEqual({ type: 'config', peerConnectionOptions, protocolVersion: '1.3.0' });
  });

  it('confirms a re-identification and reports it again', async () => {
    const { endpoint, client, inbox } = await identified();
    const again = nextEvent(endpoint, 'identified');
    sendJson(client, { type: 'endpointId', id: 'Renamed' });
    expect(await again).toEqual(['Renamed']);
    expect(await inbox.next()).toStrictEqual({ type: 'endpointIdConfirm', committedId: 'Renamed' });
    expect(endpoint.streamerId).toBe('Renamed');
  });

  it('accepts what a UE 5.7+ app adds: playerId on any message, and any protocolVersion or none', async () => {
    const { endpoint, client, inbox } = await connect();
    await inbox.next();
    await inbox.next();
    const identifiedAs = nextEvent(endpoint, 'identified');
    sendJson(client, { type: 'endpointId', id: 'DefaultStreamer', protocolVersion: '2.0.0', playerId: 'Player0' });
    expect(await identifiedAs).toEqual(['DefaultStreamer']);
    expect(await inbox.next()).toStrictEqual({ type: 'endpointIdConfirm', committedId: 'DefaultStreamer' });

    endpoint.connectPlayer('Player0');
    await inbox.next();
    const offered = nextEvent(endpoint, 'offer');
    sendJson(client, { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP, protocolVersion: '2.0.0' });
    expect(await offered).toEqual(['Player0', UE_OFFER_SDP]);
    sendJson(client, { type: 'ping', time: 5, playerId: 'Player0' });
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 5 });
    sendJson(client, { type: 'pong', time: 6, playerId: 'Player0' });
    sendJson(client, { type: 'endpointId', id: 'DefaultStreamer', playerId: 'Player0' });
    expect(await inbox.next()).toStrictEqual({ type: 'endpointIdConfirm', committedId: 'DefaultStreamer' });
    expect(endpoint.isOpen).toBe(true);
  });

  it('asks decideStreamerId about each endpointId: keep confirms the current ID and leaves the socket up', async () => {
    const asked: [string, string | undefined][] = [];
    const { endpoint, client, inbox } = await identified({
      decideStreamerId: (requested, current) => {
        asked.push([requested, current]);
        return current === undefined || requested === current ? { kind: 'commit' } : { kind: 'keep' };
      },
    });
    const refusals = recordEvents(endpoint, 'streamerIdRefused');
    const identifications = recordEvents(endpoint, 'identified');
    sendJson(client, { type: 'endpointId', id: 'SecondStreamer' });
    expect(await inbox.next()).toStrictEqual({ type: 'endpointIdConfirm', committedId: 'DefaultStreamer' });
    expect(asked).toEqual([['DefaultStreamer', undefined], ['SecondStreamer', 'DefaultStreamer']]);
    expect(refusals).toEqual([['SecondStreamer', 'kept']]);
    expect(identifications).toEqual([]);
    expect(endpoint.streamerId).toBe('DefaultStreamer');

    // The socket still serves its first ID.
    endpoint.connectPlayer('Player0');
    expect(await inbox.next()).toMatchObject({ type: 'playerConnected', playerId: 'Player0' });
    expect(endpoint.isOpen).toBe(true);
  });

  it('refuse closes the socket with 1008 and the reason, after streamerIdRefused; keep before any ID is a refusal', async () => {
    const refused = await connect({ decideStreamerId: () => ({ kind: 'refuse', reason: 'this session already has a streamer' }) });
    const events: string[] = [];
    refused.endpoint.on('streamerIdRefused', (id, outcome) => events.push(`refused ${id} ${outcome}`));
    refused.endpoint.on('identified', (id) => events.push(`identified ${id}`));
    refused.endpoint.on('closed', (code, reason) => events.push(`closed ${code} ${reason}`));
    sendJson(refused.client, { type: 'endpointId', id: 'SecondStreamer' });
    expect(await refused.clientClosed).toEqual({ code: 1008, reason: 'this session already has a streamer' });
    expect(events).toEqual(['refused SecondStreamer closed', 'closed 1008 this session already has a streamer']);
    expect(refused.endpoint.streamerId).toBeUndefined();
    await refused.dispose();

    const kept = await connect({ decideStreamerId: () => ({ kind: 'keep' }) });
    const refusals = recordEvents(kept.endpoint, 'streamerIdRefused');
    sendJson(kept.client, { type: 'endpointId', id: 'First' });
    expect(await kept.clientClosed).toEqual({ code: 1008, reason: 'streamer id refused' });
    expect(refusals).toEqual([['First', 'closed']]);
  });

  it('drops messages for players that are not connected and ignores SFU-only ones', async () => {
    const { endpoint, client, inbox } = await identified();
    const offers = recordEvents(endpoint, 'offer');
    const candidates = recordEvents(endpoint, 'iceCandidate');
    const drops = recordEvents(endpoint, 'disconnectPlayer');
    sendJson(client, { type: 'offer', playerId: 'Player9', sdp: UE_OFFER_SDP });
    sendJson(client, { type: 'iceCandidate', playerId: 'Player9', candidate: HOST_CANDIDATE });
    sendJson(client, { type: 'disconnectPlayer', playerId: 'Player9' });
    sendJson(client, { type: 'layerPreference', playerId: 'Player9', spatialLayer: 0, temporalLayer: 0 });
    sendJson(client, { type: 'pong', time: 1 });
    sendJson(client, { type: 'ping', time: 2 });
    // Frames are handled in order, so the pong proves the earlier ones were handled.
    expect(await inbox.next()).toStrictEqual({ type: 'pong', time: 2 });
    expect([offers, candidates, drops]).toEqual([[], [], []]);
    expect(endpoint.isOpen).toBe(true);
  });

  it('refuses wrong use with typed errors', async () => {
    const { endpoint, client, inbox } = await connect();
    await inbox.next();
    await inbox.next();
    expect(() => endpoint.connectPlayer('Player0')).toThrow(SignallingUsageError);

    const done = nextEvent(endpoint, 'identified');
    sendJson(client, { type: 'endpointId', id: 'DefaultStreamer' });
    await done;
    expect(() => endpoint.connectPlayer('')).toThrow(expect.objectContaining({ kind: 'invalid_argument' }));
    endpoint.connectPlayer('Player0');
    expect(() => endpoint.connectPlayer('Player0')).toThrow(expect.objectContaining({ kind: 'wrong_state' }));
    expect(() => endpoint.sendAnswer('Player1', BROWSER_ANSWER_SDP)).toThrow(expect.objectContaining({ kind: 'wrong_state' }));
    expect(() => endpoint.sendIceCandidate('Player1', HOST_CANDIDATE)).toThrow(expect.objectContaining({ kind: 'wrong_state' }));
    expect(() => endpoint.close(1006, 'x')).toThrow(expect.objectContaining({ kind: 'invalid_argument' }));
    endpoint.disconnectPlayer('Player1'); // unknown: a no-op
    expect(endpoint.isOpen).toBe(true);
  });

  it('reports closed once when the Unreal app closes, and ignores sends afterwards', async () => {
    const { endpoint, client, server } = await identified();
    endpoint.connectPlayer('Player0');
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    client.close(1001, 'UE exiting');
    await serverClosed;
    expect(closes).toEqual([[1001, 'UE exiting']]);
    expect(endpoint.isOpen).toBe(false);
    expect(endpoint.hasPlayer('Player0')).toBe(false);

    endpoint.sendAnswer('Player0', BROWSER_ANSWER_SDP);
    endpoint.connectPlayer('Player1');
    endpoint.disconnectPlayer('Player0');
    endpoint.close();
    expect(closes).toHaveLength(1);
  });

  it('closes with our code and reason, once, however often close() is called', async () => {
    const { endpoint, server, clientClosed } = await identified();
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    endpoint.close(4000, 'session ended');
    expect(closes).toEqual([[4000, 'session ended']]);
    endpoint.close(1000, 'again');
    expect(await clientClosed).toEqual({ code: 4000, reason: 'session ended' });
    await serverClosed;
    expect(closes).toEqual([[4000, 'session ended']]);
  });

  it('cuts an over-long close reason to 123 bytes', async () => {
    const { endpoint, clientClosed } = await identified();
    endpoint.close(4000, 'é'.repeat(100));
    expect(await clientClosed).toEqual({ code: 4000, reason: 'é'.repeat(61) });
  });

  const hostile: [string, (client: WebSocket) => void, number, string][] = [
    ['a binary frame', (c) => c.send(Buffer.from('{"type":"ping","time":1}')), 1003, 'binary frames are not accepted'],
    ['malformed JSON', (c) => c.send('{"type":"endpointId",'), 1008, 'malformed JSON'],
    ['a player message', (c) => c.send('{"type":"subscribe","streamerId":"DefaultStreamer"}'), 1008, 'subscribe is not allowed from a streamer'],
    ['an offer without playerId', (c) => c.send(JSON.stringify({ type: 'offer', sdp: UE_OFFER_SDP })), 1008, 'invalid offer: playerId is missing'],
    ['an oversized frame', (c) => c.send(JSON.stringify({ type: 'ping', time: 1, pad: 'x'.repeat(70_000) })), 1009, 'message exceeds 65536 bytes'],
  ];

  it.each(hostile)('closes on %s with its code and reason', async (_name, send, code, reason) => {
    const { endpoint, client, server, clientClosed } = await identified();
    const errors = recordEvents(endpoint, 'protocolError');
    const closes = recordEvents(endpoint, 'closed');
    const serverClosed = whenClosed(server);
    send(client);
    expect(await clientClosed).toEqual({ code, reason });
    await serverClosed;
    expect(errors).toEqual([[reason]]);
    expect(closes).toEqual([[code, reason]]);
  });

  it('keeps no keepalive by default, and uses one when asked', async () => {
    const first = await connect();
    expect(first.server.listenerCount('pong')).toBe(0);
    await first.dispose();

    const clock = new ManualClock();
    const { endpoint, client, server } = await connect({ keepalive: { clock } });
    expect(server.listenerCount('pong')).toBe(1);
    const closed = nextEvent(endpoint, 'closed');
    client.pause();
    clock.advance(15_000);
    clock.advance(10_000);
    expect(await closed).toEqual([1006, 'keepalive timeout']);
  });

  it('limits the rate of messages only when asked', async () => {
    const first = await identified();
    for (let i = 0; i < 500; i++) sendJson(first.client, { type: 'ping', time: i });
    for (let i = 0; i < 500; i++) expect(await first.inbox.next()).toStrictEqual({ type: 'pong', time: i });
    await first.dispose();

    const clock = new ManualClock();
    const { endpoint, client, inbox, clientClosed } = await connect({ rateLimit: { burst: 3, perSecond: 1 }, clock });
    const errors = recordEvents(endpoint, 'protocolError');
    for (let i = 0; i < 4; i++) sendJson(client, { type: 'ping', time: i });
    expect(await clientClosed).toEqual({ code: 1008, reason: 'too many messages' });
    expect([await inbox.next(), await inbox.next(), await inbox.next(), await inbox.next(), await inbox.next()]).toEqual([
      { type: 'config', peerConnectionOptions: {}, protocolVersion: '1.3.0' },
      { type: 'identify' },
      { type: 'pong', time: 0 },
      { type: 'pong', time: 1 },
      { type: 'pong', time: 2 },
    ]);
    expect(errors).toEqual([['too many messages']]);
  });

  it("terminates an app that stops reading once its unsent data passes maxBufferedBytes, reported as 1008 'not reading: too much unsent data'", async () => {
    const { endpoint, client, clientClosed } = await identified({ maxBufferedBytes: 16 * 1024 });
    endpoint.connectPlayer('Player0');
    const closed = nextEvent(endpoint, 'closed');
    client.pause(); // a hung app: nothing read
    let sent = 0;
    while (endpoint.isOpen && sent < 500_000) {
      endpoint.sendIceCandidate('Player0', RELAY_CANDIDATE);
      sent += 1;
    }
    expect(endpoint.isOpen).toBe(false);
    expect(await closed).toEqual([1008, 'not reading: too much unsent data']);
    client.resume();
    expect((await clientClosed).code).toBe(1006);
  });
});
