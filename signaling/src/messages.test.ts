// The builders write exactly the JSON of pixel-streaming.md §1.3, leave out absent optional
// fields, and what they build for a peer parses back unchanged at the edge.
import { describe, expect, it } from 'vitest';
import {
  createAnswer,
  createConfig,
  createDataChannelRequest,
  createDisconnectPlayer,
  createEndpointId,
  createEndpointIdConfirm,
  createIceCandidate,
  createIdentify,
  createLayerPreference,
  createListStreamers,
  createOffer,
  createPeerDataChannelsReady,
  createPing,
  createPlayerConnected,
  createPlayerDisconnected,
  createPong,
  createStreamerIdChanged,
  createStreamerList,
  createSubscribe,
  createSubscribeFailed,
  createUnsubscribe,
  isServerExtensionType,
  SIGNALLING_PROTOCOL_VERSION,
} from './messages';
import { parseSignallingMessage, type SenderRole } from './parser';
import { HOST_CANDIDATE, RELAY_CANDIDATE, UE_OFFER_SDP } from '../../test/support/signaling/fixtures';

describe('builders', () => {
  it('write the wire JSON of a Wilbur 5.5 session', () => {
    expect(SIGNALLING_PROTOCOL_VERSION).toBe('1.3.0');
    const wire: [object, string][] = [
      [createConfig(), '{"type":"config","peerConnectionOptions":{},"protocolVersion":"1.3.0"}'],
      [
        createConfig({ iceServers: [{ urls: ['stun:stun.example.com:3478', 'turn:turn.example.com:3478'], username: 'u', credential: 'p' }], iceTransportPolicy: 'relay' }),
        '{"type":"config","peerConnectionOptions":{"iceServers":[{"urls":["stun:stun.example.com:3478","turn:turn.example.com:3478"],"username":"u","credential":"p"}],"iceTransportPolicy":"relay"},"protocolVersion":"1.3.0"}',
      ],
      [createIdentify(), '{"type":"identify"}'],
      [createEndpointId('DefaultStreamer'), '{"type":"endpointId","id":"DefaultStreamer"}'],
      [createEndpointIdConfirm('DefaultStreamer'), '{"type":"endpointIdConfirm","committedId":"DefaultStreamer"}'],
      [createStreamerIdChanged('DefaultStreamer1'), '{"type":"streamerIdChanged","newID":"DefaultStreamer1"}'],
      [createListStreamers(), '{"type":"listStreamers"}'],
      [createStreamerList(['DefaultStreamer']), '{"type":"streamerList","ids":["DefaultStreamer"]}'],
      [createSubscribe('DefaultStreamer'), '{"type":"subscribe","streamerId":"DefaultStreamer"}'],
      [createUnsubscribe(), '{"type":"unsubscribe"}'],
      [createSubscribeFailed('full'), '{"type":"subscribeFailed","message":"full"}'],
      [createPlayerConnected('Player0'), '{"type":"playerConnected","playerId":"Player0","dataChannel":true,"sfu":false}'],
      [createPlayerDisconnected('Player0'), '{"type":"playerDisconnected","playerId":"Player0"}'],
      [createOffer('v=0', { playerId: 'Player0' }), '{"type":"offer","sdp":"v=0","playerId":"Player0"}'],
      [createOffer('v=0', { playerId: undefined }), '{"type":"offer","sdp":"v=0"}'],
      [createAnswer('v=0', { minBitrateBps: 0, maxBitrateBps: 0 }), '{"type":"answer","sdp":"v=0","minBitrateBps":0,"maxBitrateBps":0}'],
      [
        createIceCandidate(HOST_CANDIDATE, 'Player0'),
        `{"type":"iceCandidate","candidate":{"candidate":"${HOST_CANDIDATE.candidate}","sdpMid":"0","sdpMLineIndex":0},"playerId":"Player0"}`,
      ],
      [createDisconnectPlayer('Player0', 'AFK'), '{"type":"disconnectPlayer","playerId":"Player0","reason":"AFK"}'],
      [createPing(1780000000123), '{"type":"ping","time":1780000000123}'],
      [createPong(1780000000123), '{"type":"pong","time":1780000000123}'],
      [createLayerPreference(2, 1), '{"type":"layerPreference","spatialLayer":2,"temporalLayer":1}'],
      [createDataChannelRequest(), '{"type":"dataChannelRequest"}'],
      [createPeerDataChannelsReady(), '{"type":"peerDataChannelsReady"}'],
    ];
    for (const [message, json] of wire) expect(JSON.stringify(message)).toBe(json);
  });

  it('copy only the RTCIceCandidateInit fields of a candidate', () => {
    const browserCandidate = { ...RELAY_CANDIDATE, relayProtocol: 'udp', address: '203.0.113.7' };
    expect(createIceCandidate(browserCandidate).candidate).toStrictEqual(RELAY_CANDIDATE);
  });

  it('build what parses back unchanged for the role that sends it', () => {
    const sent: [SenderRole, object][] = [
      ['streamer', createEndpointId('DefaultStreamer', '1.0.0')],
      ['streamer', createOffer(UE_OFFER_SDP, { playerId: 'Player0' })],
      ['streamer', createIceCandidate(HOST_CANDIDATE, 'Player0')],
      ['streamer', createDisconnectPlayer('Player0')],
      ['streamer', createLayerPreference(0, 0, 'Player0')],
      ['streamer', createPing(1)],
      ['player', createListStreamers()],
      ['player', createSubscribe('DefaultStreamer')],
      ['player', createUnsubscribe()],
      ['player', createAnswer(UE_OFFER_SDP, { minBitrateBps: 0, maxBitrateBps: 0 })],
      ['player', createIceCandidate(RELAY_CANDIDATE)],
      ['player', createPong(2)],
      ['player', createDataChannelRequest()],
      ['player', createPeerDataChannelsReady()],
    ];
    for (const [role, message] of sent) {
      expect(parseSignallingMessage(JSON.stringify(message), role)).toStrictEqual({ ok: true, message });
    }
  });
});

describe('server extension types', () => {
  it('start with pixelfleet and name something after it', () => {
    expect(isServerExtensionType('pixelfleetQueue')).toBe(true);
    expect(isServerExtensionType('pixelfleet')).toBe(false);
    expect(isServerExtensionType('Pixelfleetqueue')).toBe(false);
    expect(isServerExtensionType('offer')).toBe(false);
  });
});
