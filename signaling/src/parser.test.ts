// The edge parser: every message a role may send is accepted in a real-looking form; every
// rejection path gives its exact reason and close code, never throws and never pollutes prototypes.
import { describe, expect, it } from 'vitest';
import { CLOSE_CODES, MAX_CLOSE_REASON_BYTES } from './close-codes';
import { ALLOWED_TYPES, DEFAULT_MAX_MESSAGE_BYTES, parseSignallingMessage, type SenderRole } from './parser';
import { PLAYER_EXTENSION_TYPES } from './messages';
import { FIELD_LIMITS } from './schemas';
import { BROWSER_ANSWER_SDP, HOST_CANDIDATE, RELAY_CANDIDATE, UE_OFFER_SDP } from '../../test/support/signaling/fixtures';

function parse(frame: unknown, role: SenderRole) {
  return parseSignallingMessage(typeof frame === 'string' ? frame : JSON.stringify(frame), role);
}

describe('allow-lists', () => {
  it('let each role send exactly what it may send to a server', () => {
    expect([...ALLOWED_TYPES.streamer].sort()).toEqual(
      ['endpointId', 'offer', 'answer', 'iceCandidate', 'disconnectPlayer', 'layerPreference', 'ping', 'pong'].sort(),
    );
    expect([...ALLOWED_TYPES.player].sort()).toEqual(
      [
        'listStreamers', 'subscribe', 'unsubscribe', 'offer', 'answer', 'iceCandidate',
        'ping', 'pong', 'dataChannelRequest', 'peerDataChannelsReady', 'layerPreference',
      ].sort(),
    );
  });
});

describe('accepted messages', () => {
  // [frame as the peer sends it, the message we expect after the edge]
  const streamerCases: [string, object, object][] = [
    ['endpointId (PS2)', { type: 'endpointId', id: 'DefaultStreamer' }, { type: 'endpointId', id: 'DefaultStreamer' }],
    [
      'endpointId (JS streamer, with protocolVersion)',
      { type: 'endpointId', id: 'DefaultStreamer', protocolVersion: '1.0.0' },
      { type: 'endpointId', id: 'DefaultStreamer', protocolVersion: '1.0.0' },
    ],
    ['offer', { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP }, { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP }],
    [
      'answer (browser-offers flow)',
      { type: 'answer', playerId: 'Player0', sdp: BROWSER_ANSWER_SDP },
      { type: 'answer', playerId: 'Player0', sdp: BROWSER_ANSWER_SDP },
    ],
    [
      'iceCandidate',
      { type: 'iceCandidate', playerId: 'Player0', candidate: HOST_CANDIDATE },
      { type: 'iceCandidate', playerId: 'Player0', candidate: HOST_CANDIDATE },
    ],
    [
      'disconnectPlayer',
      { type: 'disconnectPlayer', playerId: 'Player0', reason: 'AFK' },
      { type: 'disconnectPlayer', playerId: 'Player0', reason: 'AFK' },
    ],
    [
      'layerPreference',
      { type: 'layerPreference', playerId: 'Player0', spatialLayer: 2, temporalLayer: 0 },
      { type: 'layerPreference', playerId: 'Player0', spatialLayer: 2, temporalLayer: 0 },
    ],
    ['ping (seconds)', { type: 'ping', time: 1780000000 }, { type: 'ping', time: 1780000000 }],
    ['pong', { type: 'pong', time: 1780000000 }, { type: 'pong', time: 1780000000 }],
  ];

  const playerCases: [string, object, object][] = [
    ['listStreamers', { type: 'listStreamers' }, { type: 'listStreamers' }],
    ['subscribe', { type: 'subscribe', streamerId: 'DefaultStreamer' }, { type: 'subscribe', streamerId: 'DefaultStreamer' }],
    ['unsubscribe', { type: 'unsubscribe' }, { type: 'unsubscribe' }],
    ['offer (legacy browser offer)', { type: 'offer', sdp: BROWSER_ANSWER_SDP }, { type: 'offer', sdp: BROWSER_ANSWER_SDP }],
    [
      'answer with the frontend bitrates',
      { type: 'answer', sdp: BROWSER_ANSWER_SDP, minBitrateBps: 0, maxBitrateBps: 0 },
      { type: 'answer', sdp: BROWSER_ANSWER_SDP, minBitrateBps: 0, maxBitrateBps: 0 },
    ],
    [
      'iceCandidate with usernameFragment',
      { type: 'iceCandidate', candidate: RELAY_CANDIDATE },
      { type: 'iceCandidate', candidate: RELAY_CANDIDATE },
    ],
    [
      'end-of-candidates marker',
      { type: 'iceCandidate', candidate: { candidate: '', sdpMid: '0', sdpMLineIndex: 0 } },
      { type: 'iceCandidate', candidate: { candidate: '', sdpMid: '0', sdpMLineIndex: 0 } },
    ],
    ['ping (epoch milliseconds)', { type: 'ping', time: 1780000000123 }, { type: 'ping', time: 1780000000123 }],
    ['pong', { type: 'pong', time: 1780000000123 }, { type: 'pong', time: 1780000000123 }],
    ['dataChannelRequest', { type: 'dataChannelRequest' }, { type: 'dataChannelRequest' }],
    ['peerDataChannelsReady', { type: 'peerDataChannelsReady' }, { type: 'peerDataChannelsReady' }],
    [
      'layerPreference as the frontend builds it (protobuf default playerId "")',
      { type: 'layerPreference', spatialLayer: 1, temporalLayer: 0, playerId: '' },
      { type: 'layerPreference', spatialLayer: 1, temporalLayer: 0 },
    ],
  ];

  it.each(streamerCases)('from a streamer: %s', (_name, frame, expected) => {
    expect(parse(frame, 'streamer')).toStrictEqual({ ok: true, message: expected });
  });

  it.each(playerCases)('from a player: %s', (_name, frame, expected) => {
    expect(parse(frame, 'player')).toStrictEqual({ ok: true, message: expected });
  });

  it('covers every allowed type of each role', () => {
    const types = (cases: [string, object, object][]) => new Set(cases.map(([, frame]) => (frame as { type: string }).type));
    expect(types(streamerCases)).toEqual(new Set(ALLOWED_TYPES.streamer));
    expect(types(playerCases)).toEqual(new Set(ALLOWED_TYPES.player));
  });

  it('accepts our pixelfleetResume from a player, dropping anything but the token', () => {
    expect(parse({ type: 'pixelfleetResume', viewerToken: 'pfv_abc', sessionId: 'session_1_2' }, 'player')).toStrictEqual({
      ok: true,
      message: { type: 'pixelfleetResume', viewerToken: 'pfv_abc' },
    });
    expect(PLAYER_EXTENSION_TYPES).toEqual(['pixelfleetResume']);
  });

  it('reads every form of ws RawData', () => {
    const text = JSON.stringify({ type: 'ping', time: 1 });
    const bytes = Buffer.from(text);
    const arrayBuffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
    for (const data of [bytes, arrayBuffer, [bytes.subarray(0, 5), bytes.subarray(5)]]) {
      expect(parseSignallingMessage(data, 'player')).toStrictEqual({ ok: true, message: { type: 'ping', time: 1 } });
    }
  });

  it('drops unknown fields and a player-claimed playerId, keeping known optional ones', () => {
    const result = parse(
      { type: 'answer', sdp: BROWSER_ANSWER_SDP, playerId: 'Player7', minBitrateBps: 100000, maxBitrateBps: 0, extra: { a: 1 } },
      'player',
    );
    expect(result).toStrictEqual({ ok: true, message: { type: 'answer', sdp: BROWSER_ANSWER_SDP, minBitrateBps: 100000, maxBitrateBps: 0 } });
  });

  it('keeps the playerId a streamer routes by, and the offer extras a 5.7 streamer or SFU adds', () => {
    const result = parse(
      { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP, sfu: false, multiplex: false, scalabilityMode: 'L1T1', unknownField: 1 },
      'streamer',
    );
    expect(result).toStrictEqual({
      ok: true,
      message: { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP, sfu: false, multiplex: false, scalabilityMode: 'L1T1' },
    });
  });

  it('accepts a playerId on any streamer message (UE 5.7+ keeps it on what it relays and may add it anywhere), dropping it where nothing routes by it', () => {
    const withPlayerId: [object, object][] = [
      [{ type: 'endpointId', id: 'DefaultStreamer', playerId: 'Player0' }, { type: 'endpointId', id: 'DefaultStreamer' }],
      [{ type: 'ping', time: 1, playerId: 'Player0' }, { type: 'ping', time: 1 }],
      [{ type: 'pong', time: 1, playerId: 'Player0' }, { type: 'pong', time: 1 }],
      [{ type: 'disconnectPlayer', playerId: 'Player0' }, { type: 'disconnectPlayer', playerId: 'Player0' }],
      [{ type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP }, { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP }],
    ];
    for (const [frame, expected] of withPlayerId) expect(parse(frame, 'streamer')).toStrictEqual({ ok: true, message: expected });
  });

  it('accepts any protocolVersion on endpointId, keeping a short string and dropping anything else, and none at all', () => {
    const endpointId = (protocolVersion?: unknown) => parse({ type: 'endpointId', id: 'S', ...(protocolVersion === undefined ? {} : { protocolVersion }) }, 'streamer');
    expect(endpointId('2.0.0')).toStrictEqual({ ok: true, message: { type: 'endpointId', id: 'S', protocolVersion: '2.0.0' } });
    expect(endpointId('')).toStrictEqual({ ok: true, message: { type: 'endpointId', id: 'S', protocolVersion: '' } });
    expect(endpointId()).toStrictEqual({ ok: true, message: { type: 'endpointId', id: 'S' } });
    for (const odd of [2, null, { major: 2 }, 'v'.repeat(FIELD_LIMITS.protocolVersion + 1)]) {
      expect(endpointId(odd)).toStrictEqual({ ok: true, message: { type: 'endpointId', id: 'S', protocolVersion: undefined } });
    }
  });

  it('accepts unicode in strings, as text or as UTF-8 bytes', () => {
    const sdp = UE_OFFER_SDP.replace('s=-', 's=Ünreal ストリーム 🎮');
    const frame = { type: 'endpointId', id: '流媒体-🎮' };
    expect(parse(frame, 'streamer')).toStrictEqual({ ok: true, message: frame });
    expect(parseSignallingMessage(Buffer.from(JSON.stringify({ type: 'offer', sdp })), 'player')).toStrictEqual({
      ok: true,
      message: { type: 'offer', sdp },
    });
  });

  it('accepts strings right at their limits', () => {
    expect(parse({ type: 'offer', playerId: 'P', sdp: 'v'.repeat(FIELD_LIMITS.sdp) }, 'streamer').ok).toBe(true);
    const candidate = { ...HOST_CANDIDATE, candidate: 'c'.repeat(FIELD_LIMITS.candidate) };
    expect(parse({ type: 'iceCandidate', candidate }, 'player').ok).toBe(true);
  });
});

describe('rejections', () => {
  const policy = CLOSE_CODES.policyViolation;
  const offer = { type: 'offer', playerId: 'Player0', sdp: UE_OFFER_SDP };
  const ice = { type: 'iceCandidate', playerId: 'Player0', candidate: HOST_CANDIDATE };

  // [name, frame (string = raw text), role, reason, close code]
  const cases: [string, unknown, SenderRole, string, number][] = [
    ['malformed JSON', '{"type":"ping",', 'player', 'malformed JSON', policy],
    ['empty frame', '', 'player', 'malformed JSON', policy],
    ['JSON array', '[{"type":"ping","time":1}]', 'player', 'message is not a JSON object', policy],
    ['JSON string', '"ping"', 'player', 'message is not a JSON object', policy],
    ['JSON null', 'null', 'streamer', 'message is not a JSON object', policy],
    ['JSON number', '42', 'streamer', 'message is not a JSON object', policy],
    ['no type', {}, 'player', 'missing type', policy],
    ['empty type', { type: '' }, 'player', 'missing type', policy],
    ['numeric type', { type: 7 }, 'player', 'type must be a string', policy],
    ['unknown type', { type: 'hello' }, 'player', 'unknown type "hello"', policy],
    ['SFU-only type', { type: 'streamerDisconnected' }, 'streamer', 'unknown type "streamerDisconnected"', policy],
    ['deprecated type', { type: 'stats', data: 'x' }, 'player', 'unknown type "stats"', policy],
    ['huge type is not echoed', { type: 'x'.repeat(60_000) }, 'player', 'unknown type', policy],
    ['type with control characters is not echoed', { type: 'ping\u0000\r\n' }, 'player', 'unknown type', policy],
    ['type with markup is not echoed', { type: '<script>alert(1)</script>' }, 'player', 'unknown type', policy],
    ['config from a player', { type: 'config', peerConnectionOptions: {} }, 'player', 'config is not allowed from a player', policy],
    ['endpointId from a player', { type: 'endpointId', id: 'Evil' }, 'player', 'endpointId is not allowed from a player', policy],
    ['disconnectPlayer from a player', { type: 'disconnectPlayer', playerId: 'Player1' }, 'player', 'disconnectPlayer is not allowed from a player', policy],
    ['subscribe from a streamer', { type: 'subscribe', streamerId: 'S' }, 'streamer', 'subscribe is not allowed from a streamer', policy],
    ['listStreamers from a streamer', { type: 'listStreamers' }, 'streamer', 'listStreamers is not allowed from a streamer', policy],
    ['identify from a streamer', { type: 'identify' }, 'streamer', 'identify is not allowed from a streamer', policy],
    ['playerConnected from a streamer', { type: 'playerConnected', playerId: 'P', dataChannel: true, sfu: false }, 'streamer', 'playerConnected is not allowed from a streamer', policy],
    ['offer without sdp', { type: 'offer', playerId: 'Player0' }, 'streamer', 'invalid offer: sdp is missing', policy],
    ['offer with numeric sdp', { ...offer, sdp: 5 }, 'streamer', 'invalid offer: sdp must be a string', policy],
    ['offer with empty sdp', { ...offer, sdp: '' }, 'streamer', 'invalid offer: sdp is too short', policy],
    ['offer with huge sdp', { ...offer, sdp: 'v'.repeat(FIELD_LIMITS.sdp + 1) }, 'streamer', 'invalid offer: sdp is too long', policy],
    ['streamer offer without playerId', { type: 'offer', sdp: UE_OFFER_SDP }, 'streamer', 'invalid offer: playerId is missing', policy],
    ['streamer offer with empty playerId', { ...offer, playerId: '' }, 'streamer', 'invalid offer: playerId is too short', policy],
    ['offer with string sfu', { ...offer, sfu: 'yes' }, 'streamer', 'invalid offer: sfu must be a boolean', policy],
    ['streamer answer without playerId', { type: 'answer', sdp: BROWSER_ANSWER_SDP }, 'streamer', 'invalid answer: playerId is missing', policy],
    ['answer with negative bitrate', { type: 'answer', sdp: BROWSER_ANSWER_SDP, minBitrateBps: -1 }, 'player', 'invalid answer: minBitrateBps is too small', policy],
    ['answer with string bitrate', { type: 'answer', sdp: BROWSER_ANSWER_SDP, maxBitrateBps: '0' }, 'player', 'invalid answer: maxBitrateBps must be a number', policy],
    ['iceCandidate without candidate', { type: 'iceCandidate', playerId: 'Player0' }, 'streamer', 'invalid iceCandidate: candidate is missing', policy],
    ['iceCandidate with null candidate', { ...ice, candidate: null }, 'streamer', 'invalid iceCandidate: candidate must be an object', policy],
    ['iceCandidate with a candidate string', { ...ice, candidate: HOST_CANDIDATE.candidate }, 'streamer', 'invalid iceCandidate: candidate must be an object', policy],
    ['iceCandidate without sdpMid', { ...ice, candidate: { candidate: 'c', sdpMLineIndex: 0 } }, 'streamer', 'invalid iceCandidate: candidate.sdpMid is missing', policy],
    ['iceCandidate with string sdpMLineIndex', { ...ice, candidate: { ...HOST_CANDIDATE, sdpMLineIndex: '0' } }, 'player', 'invalid iceCandidate: candidate.sdpMLineIndex must be a number', policy],
    ['iceCandidate with fractional sdpMLineIndex', { ...ice, candidate: { ...HOST_CANDIDATE, sdpMLineIndex: 0.5 } }, 'player', 'invalid iceCandidate: candidate.sdpMLineIndex must be an integer', policy],
    ['iceCandidate with negative sdpMLineIndex', { ...ice, candidate: { ...HOST_CANDIDATE, sdpMLineIndex: -1 } }, 'player', 'invalid iceCandidate: candidate.sdpMLineIndex is too small', policy],
    ['iceCandidate with huge candidate', { ...ice, candidate: { ...HOST_CANDIDATE, candidate: 'c'.repeat(FIELD_LIMITS.candidate + 1) } }, 'player', 'invalid iceCandidate: candidate.candidate is too long', policy],
    ['iceCandidate with huge usernameFragment', { ...ice, candidate: { ...RELAY_CANDIDATE, usernameFragment: 'u'.repeat(257) } }, 'player', 'invalid iceCandidate: candidate.usernameFragment is too long', policy],
    ['endpointId without id', { type: 'endpointId' }, 'streamer', 'invalid endpointId: id is missing', policy],
    ['endpointId with huge id', { type: 'endpointId', id: 'S'.repeat(FIELD_LIMITS.id + 1) }, 'streamer', 'invalid endpointId: id is too long', policy],
    ['subscribe with empty streamerId', { type: 'subscribe', streamerId: '' }, 'player', 'invalid subscribe: streamerId is too short', policy],
    ['subscribe with array streamerId', { type: 'subscribe', streamerId: ['DefaultStreamer'] }, 'player', 'invalid subscribe: streamerId must be a string', policy],
    ['disconnectPlayer with huge reason', { type: 'disconnectPlayer', playerId: 'Player0', reason: 'r'.repeat(FIELD_LIMITS.text + 1) }, 'streamer', 'invalid disconnectPlayer: reason is too long', policy],
    ['ping without time', { type: 'ping' }, 'player', 'invalid ping: time is missing', policy],
    ['ping with string time', { type: 'ping', time: '1' }, 'player', 'invalid ping: time must be a number', policy],
    ['ping with infinite time', '{"type":"ping","time":1e400}', 'player', 'invalid ping: time must be a number', policy],
    ['layerPreference with fractional layer', { type: 'layerPreference', spatialLayer: 0.5, temporalLayer: 0 }, 'player', 'invalid layerPreference: spatialLayer must be an integer', policy],
    ['layerPreference with NaN turned null', { type: 'layerPreference', spatialLayer: null, temporalLayer: 0 }, 'player', 'invalid layerPreference: spatialLayer must be a number', policy],
    ['pixelfleetResume from a streamer', { type: 'pixelfleetResume', viewerToken: 't' }, 'streamer', 'pixelfleetResume is not allowed from a streamer', policy],
    ['pixelfleetResume without a token', { type: 'pixelfleetResume' }, 'player', 'invalid pixelfleetResume: viewerToken is missing', policy],
    ['pixelfleetResume with an empty token', { type: 'pixelfleetResume', viewerToken: '' }, 'player', 'invalid pixelfleetResume: viewerToken is too short', policy],
    ['pixelfleetResume with a huge token', { type: 'pixelfleetResume', viewerToken: 't'.repeat(FIELD_LIMITS.token + 1) }, 'player', 'invalid pixelfleetResume: viewerToken is too long', policy],
    ['pixelfleetResume with a numeric token', { type: 'pixelfleetResume', viewerToken: 42 }, 'player', 'invalid pixelfleetResume: viewerToken must be a string', policy],
    ['another pixelfleet type', { type: 'pixelfleetQueue', position: 1 }, 'player', 'unknown type "pixelfleetQueue"', policy],
    ['layerPreference with huge layer', { type: 'layerPreference', spatialLayer: 2 ** 40, temporalLayer: 0 }, 'player', 'invalid layerPreference: spatialLayer is too large', policy],
  ];

  it.each(cases)('%s', (_name, frame, role, reason, closeCode) => {
    expect(parse(frame, role)).toStrictEqual({ ok: false, reason, closeCode });
  });

  it('refuses binary frames with 1003', () => {
    const result = parseSignallingMessage(Buffer.from('{"type":"ping","time":1}'), 'player', { binary: true });
    expect(result).toStrictEqual({ ok: false, reason: 'binary frames are not accepted', closeCode: 1003 });
  });

  it('refuses frames over the default 64 KiB with 1009, counting bytes rather than characters', () => {
    expect(DEFAULT_MAX_MESSAGE_BYTES).toBe(65_536);
    const padded = (length: number) => JSON.stringify({ type: 'ping', time: 1, pad: 'x'.repeat(length - 33) });
    expect(padded(65_536)).toHaveLength(65_536);
    expect(parseSignallingMessage(padded(65_536), 'player').ok).toBe(true);
    expect(parseSignallingMessage(padded(65_537), 'player')).toStrictEqual({
      ok: false,
      reason: 'message exceeds 65536 bytes',
      closeCode: 1009,
    });
    // 40 000 characters, 80 000 bytes of UTF-8.
    const wide = JSON.stringify({ type: 'ping', time: 1, pad: 'é'.repeat(40_000) });
    expect(parseSignallingMessage(wide, 'player')).toMatchObject({ ok: false, closeCode: 1009 });
    expect(parseSignallingMessage(Buffer.from(wide), 'player')).toMatchObject({ ok: false, closeCode: 1009 });
  });

  it('honours a custom maxBytes', () => {
    const frame = JSON.stringify({ type: 'offer', sdp: UE_OFFER_SDP });
    expect(parseSignallingMessage(frame, 'player', { maxBytes: 100 })).toStrictEqual({
      ok: false,
      reason: 'message exceeds 100 bytes',
      closeCode: 1009,
    });
  });

  it('refuses invalid UTF-8 with 1007', () => {
    const bytes = Buffer.concat([Buffer.from('{"type":"ping","time":1,"x":"'), Buffer.from([0xc3, 0x28]), Buffer.from('"}')]);
    expect(parseSignallingMessage(bytes, 'player')).toStrictEqual({ ok: false, reason: 'invalid UTF-8', closeCode: 1007 });
  });

  it('keeps every reason within a close frame and free of the peer content', () => {
    const hostile = 'Z'.repeat(5000);
    const frames: unknown[] = [
      { type: hostile },
      { type: 'offer', playerId: hostile, sdp: hostile },
      { type: 'iceCandidate', playerId: 'P', candidate: { candidate: hostile, sdpMid: hostile, sdpMLineIndex: 0 } },
      { type: 'subscribe', streamerId: hostile },
      { [hostile]: 1 },
      `{"${hostile}":`,
    ];
    for (const role of ['player', 'streamer'] as const) {
      for (const frame of [...frames, ...cases.map(([, f]) => f)]) {
        const result = parse(frame, role);
        if (result.ok) continue;
        expect(Buffer.byteLength(result.reason)).toBeLessThanOrEqual(MAX_CLOSE_REASON_BYTES);
        expect(result.reason).not.toContain('ZZZ');
      }
    }
  });
});

describe('hostile keys', () => {
  it('does not let __proto__ pollute Object.prototype or the parsed message', () => {
    const frame = '{"type":"ping","time":1,"__proto__":{"polluted":true},"constructor":{"prototype":{"polluted":true}}}';
    const result = parseSignallingMessage(frame, 'player');
    expect(result).toStrictEqual({ ok: true, message: { type: 'ping', time: 1 } });
    if (!result.ok) return;
    expect(Object.getPrototypeOf(result.message)).toBe(Object.prototype);
    expect('polluted' in result.message).toBe(false);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('does not let __proto__ inside a candidate change its prototype', () => {
    const frame = `{"type":"iceCandidate","candidate":{"candidate":"c","sdpMid":"0","sdpMLineIndex":0,"__proto__":{"isAdmin":true}}}`;
    const result = parseSignallingMessage(frame, 'player');
    expect(result.ok).toBe(true);
    if (!result.ok || result.message.type !== 'iceCandidate') return;
    expect(Object.getPrototypeOf(result.message.candidate)).toBe(Object.prototype);
    expect('isAdmin' in result.message.candidate).toBe(false);
  });

  it('does not read a type through __proto__', () => {
    expect(parseSignallingMessage('{"__proto__":{"type":"ping"},"time":1}', 'player')).toStrictEqual({
      ok: false,
      reason: 'missing type',
      closeCode: 1008,
    });
  });

  it.each(['__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'])('treats type %s as unknown', (type) => {
    const result = parse({ type }, 'streamer');
    expect(result).toMatchObject({ ok: false, closeCode: 1008 });
    if (!result.ok) expect(result.reason.startsWith('unknown type')).toBe(true);
  });
});

describe('robustness', () => {
  it('never throws, whatever the bytes', () => {
    // A fixed-seed generator, so a failure is reproducible.
    let seed = 0x2f6b3c1d;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) & 0x7fffffff;
      return seed / 0x7fffffff;
    };
    const alphabet = '{}[]":,\\ -.0123456789eEtrufalsn' + 'typeofersdpcandidate' + '\u00e9\ud83c\udfae\ud800';
    for (let i = 0; i < 200; i++) {
      const length = Math.floor(random() * 80);
      let text = '';
      for (let j = 0; j < length; j++) text += alphabet[Math.floor(random() * alphabet.length)] ?? '';
      const bytes = Buffer.from(Array.from({ length }, () => Math.floor(random() * 256)));
      for (const role of ['player', 'streamer'] as const) {
        expect(() => parseSignallingMessage(text, role)).not.toThrow();
        expect(() => parseSignallingMessage(bytes, role)).not.toThrow();
        expect(() => parseSignallingMessage(`{"type":"offer","sdp":${text}}`, role)).not.toThrow();
      }
    }
  });

  it('survives deep nesting within the size limit', () => {
    const deep = `{"type":"ping","time":1,"x":${'['.repeat(30_000)}${']'.repeat(30_000)}}`;
    expect(parseSignallingMessage(deep, 'player').ok).toBe(true);
  });
});
