import { describe, expect, it } from 'vitest';
import { decodeRelayToViewer, decodeViewerToRelay, encodeRelayedSignal, type RelayToViewerSignal, type ViewerToRelaySignal } from './relayed-signals';

const candidate = { candidate: 'candidate:1 1 udp 2130706431 127.0.0.1 50000 typ host', sdpMid: '0', sdpMLineIndex: 0 };

describe('relayed signals', () => {
  it('every viewer → relay signal survives encode and decode unchanged', () => {
    const signals: ViewerToRelaySignal[] = [
      { type: 'subscribe', streamerId: 'streamer_1' },
      { type: 'unsubscribe' },
      { type: 'answer', sdp: 'v=0\r\n', minBitrateBps: 1_000_000, maxBitrateBps: 20_000_000 },
      { type: 'iceCandidate', candidate },
    ];
    for (const signal of signals) expect(decodeViewerToRelay(encodeRelayedSignal(signal))).toEqual({ ok: true, signal });
  });

  it('every relay → viewer signal survives encode and decode unchanged', () => {
    const signals: RelayToViewerSignal[] = [
      { type: 'config', peerConnectionOptions: { iceServers: [{ urls: ['stun:stun.example.org'] }] } },
      { type: 'offer', sdp: 'v=0\r\n' },
      { type: 'iceCandidate', candidate },
    ];
    for (const signal of signals) expect(decodeRelayToViewer(encodeRelayedSignal(signal))).toEqual({ ok: true, signal });
  });

  it('a player id on a relayed message is dropped: the route names the player', () => {
    expect(decodeRelayToViewer(JSON.stringify({ type: 'offer', sdp: 'v=0', playerId: 'someone_else' }))).toEqual({ ok: true, signal: { type: 'offer', sdp: 'v=0' } });
    expect(decodeViewerToRelay(JSON.stringify({ type: 'answer', sdp: 'v=0', playerId: 'x' }))).toEqual({ ok: true, signal: { type: 'answer', sdp: 'v=0' } });
  });

  it('a config with another protocolVersion, or none, is relayed', () => {
    for (const protocolVersion of ['1.3.0', '2.0.0']) {
      expect(decodeRelayToViewer(JSON.stringify({ type: 'config', peerConnectionOptions: {}, protocolVersion }))).toEqual({ ok: true, signal: { type: 'config', peerConnectionOptions: {}, protocolVersion } });
    }
    expect(decodeRelayToViewer(JSON.stringify({ type: 'config', peerConnectionOptions: {} }))).toEqual({ ok: true, signal: { type: 'config', peerConnectionOptions: {} } });
  });

  it('refuses, with a reason, what may not cross in that direction', () => {
    expect(decodeRelayToViewer(JSON.stringify({ type: 'answer', sdp: 'v=0' }))).toEqual({ ok: false, reason: 'signal of type "answer" is not relayed in this direction' });
    expect(decodeRelayToViewer(JSON.stringify({ type: 'disconnectPlayer', playerId: 'p' }))).toEqual({ ok: false, reason: 'signal of type "disconnectPlayer" is not relayed in this direction' });
    expect(decodeViewerToRelay(JSON.stringify({ type: 'offer', sdp: 'v=0' }))).toEqual({ ok: false, reason: 'signal of type "offer" is not relayed in this direction' });
    expect(decodeViewerToRelay(JSON.stringify({ type: 'listStreamers' }))).toEqual({ ok: false, reason: 'signal of type "listStreamers" is not relayed in this direction' });
  });

  it('refuses malformed text, wrong fields and over-long signals', () => {
    expect(decodeRelayToViewer('{not json')).toEqual({ ok: false, reason: 'signal is not JSON' });
    expect(decodeRelayToViewer('[1]')).toEqual({ ok: false, reason: 'signal has no type' });
    expect(decodeRelayToViewer(JSON.stringify({ type: 'offer', sdp: 7 }))).toEqual({ ok: false, reason: 'signal of type "offer" has a bad field: sdp' });
    expect(decodeRelayToViewer(JSON.stringify({ type: 'iceCandidate', candidate: { candidate: 'x'.repeat(2_000), sdpMid: '0', sdpMLineIndex: 0 } }))).toEqual({
      ok: false,
      reason: 'signal of type "iceCandidate" has a bad field: candidate.candidate',
    });
    expect(decodeViewerToRelay(JSON.stringify({ type: 'answer', sdp: 'x'.repeat(70_000) }))).toEqual({ ok: false, reason: 'signal exceeds 65536 characters' });
  });
});
