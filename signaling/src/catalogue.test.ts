// Cross-checks our message catalogue against Epic's (lib-pixelstreamingcommon-ue5.5, a
// devDependency used only here): every Epic type is ours or deliberately unsupported, field names
// agree, and messages built by either side pass the other side's checks.
import { MessageHelpers, MessageRegistry, Messages } from '@epicgames-ps/lib-pixelstreamingcommon-ue5.5';
import { describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  createAnswer,
  createConfig,
  createDisconnectPlayer,
  createEndpointId,
  createEndpointIdConfirm,
  createIceCandidate,
  createIdentify,
  createLayerPreference,
  createListStreamers,
  createOffer,
  createPing,
  createPlayerConnected,
  createPlayerDisconnected,
  createPong,
  createStreamerIdChanged,
  createStreamerList,
  createSubscribe,
  createSubscribeFailed,
  createUnsubscribe,
  createDataChannelRequest,
  createPeerDataChannelsReady,
  MESSAGE_TYPES,
  type MessageType,
  type SignallingMessage,
} from './messages';
import { ALLOWED_TYPES, parseSignallingMessage, type SenderRole } from './parser';
import { MESSAGE_SCHEMAS } from './schemas';
import { BROWSER_ANSWER_SDP, HOST_CANDIDATE, RELAY_CANDIDATE, UE_OFFER_SDP } from '../../test/support/signaling/fixtures';

/** Epic message types we do not support, and why. */
const DELIBERATELY_UNSUPPORTED: Readonly<Record<string, string>> = {
  streamerDisconnected: 'server → SFU only; a plain player just gets its socket closed',
  peerDataChannels: 'SFU → player, data-channel pairs mode; we never present as an SFU',
  streamerDataChannels: 'SFU → streamer, data-channel pairs mode',
  startStreaming: 'SFU → server: the SFU came up',
  stopStreaming: 'SFU → server: the SFU went down',
  playerCount: 'deprecated; 5.5+ never sends it',
  stats: 'deprecated; Wilbur only printed it',
};

/** Entries of Epic's Messages namespace that are not messages, only parts of them. */
const NOT_MESSAGES = new Set(['base_message', 'peerConnectionOptions', 'iceCandidateData']);

/** Where we deliberately differ from Epic on whether a field is required, and why. */
const REQUIREDNESS_EXCEPTIONS: Readonly<Record<string, string>> = {
  'layerPreference.playerId': 'Epic requires it, but its frontend sends "" (protobuf default); the server stamps the player anyway',
  // protobuf-ts marks every message-typed field optional.
  'iceCandidate.candidate': 'optional for Epic; an iceCandidate without its candidate carries nothing',
  'config.peerConnectionOptions': 'optional for Epic; the frontend hands it to new RTCPeerConnection(), so we always send it',
};

interface EpicField {
  readonly name: string;
  readonly opt: boolean;
}

interface EpicMessageType {
  readonly typeName: string;
  readonly fields: readonly EpicField[];
}

function isMessageType(value: unknown): value is EpicMessageType {
  return typeof value === 'object' && value !== null && 'typeName' in value && typeof value.typeName === 'string' && 'fields' in value;
}

const epicTypes = new Map<string, EpicMessageType>();
for (const value of Object.values(Messages)) {
  if (isMessageType(value)) epicTypes.set(value.typeName, value);
}
const registryNames = Object.keys(MessageRegistry);
const ours = new Set<string>(MESSAGE_TYPES);

function epicType(type: string): EpicMessageType {
  const found = epicTypes.get(type);
  if (found === undefined) throw new Error(`Epic has no message ${type}`);
  return found;
}

describe("our catalogue against Epic's", () => {
  it('covers every Epic message type or lists it as deliberately unsupported', () => {
    expect(epicTypes.size).toBeGreaterThan(20);
    const epicNames = new Set([...epicTypes.keys(), ...registryNames]);
    const unaccounted = [...epicNames].filter((name) => !ours.has(name) && !(name in DELIBERATELY_UNSUPPORTED) && !NOT_MESSAGES.has(name));
    expect(unaccounted).toEqual([]);
  });

  it('invents no message type and keeps the unsupported list current', () => {
    expect(MESSAGE_TYPES.filter((type) => !epicTypes.has(type))).toEqual([]);
    expect(Object.keys(DELIBERATELY_UNSUPPORTED).filter((type) => !epicTypes.has(type))).toEqual([]);
    expect(Object.keys(DELIBERATELY_UNSUPPORTED).filter((type) => ours.has(type))).toEqual([]);
    expect([...NOT_MESSAGES].filter((name) => !epicTypes.has(name))).toEqual([]);
  });

  it.each(MESSAGE_TYPES)('%s has the same fields as Epic, required where Epic requires them', (type: MessageType) => {
    const shape: Readonly<Record<string, z.ZodType | undefined>> = MESSAGE_SCHEMAS[type].shape;
    const ourFields = Object.keys(shape).filter((name) => name !== 'type').sort();
    const epicFields = epicType(type).fields.filter((field) => field.name !== 'type');
    expect(ourFields).toEqual(epicFields.map((field) => field.name).sort());

    for (const field of epicFields) {
      const name = `${type}.${field.name}`;
      const ourOptional = shape[field.name]?.safeParse(undefined).success ?? false;
      // An exception that no longer differs must leave the list.
      const expected = name in REQUIREDNESS_EXCEPTIONS ? !field.opt : field.opt;
      expect({ field: name, optional: ourOptional }).toEqual({ field: name, optional: expected });
    }
  });
});

describe("messages built by Epic's library", () => {
  // What the frontend and the JS streamer send, built the way they build it (createMessage).
  const sent: [SenderRole, string, object][] = [
    ['streamer', 'endpointId', { id: 'DefaultStreamer', protocolVersion: '1.0.0' }],
    ['streamer', 'offer', { sdp: UE_OFFER_SDP, playerId: 'Player0' }],
    ['streamer', 'answer', { sdp: BROWSER_ANSWER_SDP, playerId: 'Player0' }],
    ['streamer', 'iceCandidate', { candidate: HOST_CANDIDATE, playerId: 'Player0' }],
    ['streamer', 'disconnectPlayer', { playerId: 'Player0', reason: 'AFK' }],
    ['streamer', 'layerPreference', { spatialLayer: 1, temporalLayer: 0, playerId: 'Player0' }],
    ['streamer', 'ping', { time: 1780000000 }],
    ['streamer', 'pong', { time: 1780000000 }],
    ['player', 'listStreamers', {}],
    ['player', 'subscribe', { streamerId: 'DefaultStreamer' }],
    ['player', 'unsubscribe', {}],
    ['player', 'offer', { sdp: BROWSER_ANSWER_SDP, minBitrateBps: 0, maxBitrateBps: 0 }],
    ['player', 'answer', { sdp: BROWSER_ANSWER_SDP, minBitrateBps: 0, maxBitrateBps: 0 }],
    ['player', 'iceCandidate', { candidate: RELAY_CANDIDATE }],
    ['player', 'ping', { time: 1780000000123 }],
    ['player', 'pong', { time: 1780000000123 }],
    ['player', 'dataChannelRequest', {}],
    ['player', 'peerDataChannelsReady', {}],
    ['player', 'layerPreference', { spatialLayer: 1, temporalLayer: 0 }],
  ];

  it('cover every type each role may send', () => {
    for (const role of ['streamer', 'player'] as const) {
      expect(new Set(sent.filter(([r]) => r === role).map(([, type]) => type))).toEqual(new Set(ALLOWED_TYPES[role]));
    }
  });

  it.each(sent)('pass our parser (%s %s)', (role, type, fields) => {
    const message = MessageHelpers.createMessage(epicType(type) as unknown as Parameters<typeof MessageHelpers.createMessage>[0], fields);
    const result = parseSignallingMessage(JSON.stringify(message), role);
    expect(result).toMatchObject({ ok: true, message: { type } });
  });
});

describe("messages built by our builders", () => {
  const built: SignallingMessage[] = [
    createConfig({ iceServers: [{ urls: 'stun:stun.example.com:3478' }] }),
    createIdentify(),
    createEndpointId('DefaultStreamer'),
    createEndpointIdConfirm('DefaultStreamer'),
    createStreamerIdChanged('DefaultStreamer1'),
    createListStreamers(),
    createStreamerList(['DefaultStreamer']),
    createSubscribe('DefaultStreamer'),
    createUnsubscribe(),
    createSubscribeFailed('No streamer with that ID is available.'),
    createPlayerConnected('Player0'),
    createPlayerDisconnected('Player0'),
    createOffer(UE_OFFER_SDP, { playerId: 'Player0' }),
    createAnswer(BROWSER_ANSWER_SDP, { minBitrateBps: 0, maxBitrateBps: 0 }),
    createIceCandidate(RELAY_CANDIDATE, 'Player0'),
    createDisconnectPlayer('Player0', 'AFK'),
    createPing(1),
    createPong(1),
    createLayerPreference(1, 0, 'Player0'),
    createDataChannelRequest(),
    createPeerDataChannelsReady(),
  ];

  it('cover the whole catalogue', () => {
    expect(new Set(built.map((message) => message.type))).toEqual(ours);
  });

  it.each(built.filter((message) => message.type in MessageRegistry).map((message) => [message.type, message] as const))(
    "pass Epic's validateMessage (%s)",
    (_type, message) => {
      expect(MessageHelpers.validateMessage(JSON.parse(JSON.stringify(message)) as { type: string })).not.toBeNull();
    },
  );
});
