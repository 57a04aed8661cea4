// The stored form of a command (worker_commands.payload): every kind round-trips, rows in the
// format written before it (the domain object as JSON) still decode, and anything else is refused.
import { describe, expect, it } from 'vitest';
import { AgentContractError, type AgentCommand } from './agent-contract';
import { decodeStoredCommand, encodeStoredCommand } from './stored-command';

const COMMANDS: AgentCommand[] = [
  {
    kind: 'startSession', sessionId: 'session_1_1', projectId: 'prj_1', uploadId: 'upl_1', streamingId: 'str_1', playerId: 'player_1', codec: 'AV1',
    minBitrateBps: 100_000, maxBitrateBps: 40_000_000, resX: 1920, resY: 1080, fps: 60, launchArgs: ['-AudioMixer'], maxRunTimeMinutes: 0, startupTimeoutSeconds: 60, warm: false,
  },
  { kind: 'stopSession', sessionId: 'session_1_1', reason: 'viewer left', graceMs: 5_000 },
  { kind: 'prepareBuild', uploadId: 'upl_1', projectId: 'prj_1', downloadUrl: 'https://x/y', sizeBytes: 5_000_000_000, sha256: 'ab'.repeat(32) },
  { kind: 'deleteBuild', uploadId: 'upl_1' },
];

describe('stored commands', () => {
  it('round-trips every kind through the proto JSON it stores', () => {
    for (const c of COMMANDS) expect(decodeStoredCommand(encodeStoredCommand(c))).toEqual(c);
    expect(JSON.parse(encodeStoredCommand(COMMANDS[1]!))).toEqual({ stopSession: { sessionId: 'session_1_1', reason: 'viewer left', graceMs: 5000 } });
  });

  it('decodes rows in the format written before (JSON.stringify of the domain command)', () => {
    // Exactly what registry.sendCommand stored until now.
    const rows = [
      '{"kind":"startSession","sessionId":"session_1_1","projectId":"prj_1","uploadId":"upl_1","streamingId":"str_1","playerId":"player_1","codec":"H264","minBitrateBps":1000000,"maxBitrateBps":20000000,"resX":1920,"resY":1080,"fps":30,"launchArgs":[],"maxRunTimeMinutes":60,"startupTimeoutSeconds":60}',
      '{"kind":"stopSession","sessionId":"session_1_1","reason":"viewer left","graceMs":10000}',
    ];
    expect(rows.map(decodeStoredCommand)).toEqual([
      {
        kind: 'startSession', sessionId: 'session_1_1', projectId: 'prj_1', uploadId: 'upl_1', streamingId: 'str_1', playerId: 'player_1', codec: 'H264',
        minBitrateBps: 1_000_000, maxBitrateBps: 20_000_000, resX: 1920, resY: 1080, fps: 30, launchArgs: [], maxRunTimeMinutes: 60, startupTimeoutSeconds: 60, warm: false,
      },
      { kind: 'stopSession', sessionId: 'session_1_1', reason: 'viewer left', graceMs: 10_000 },
    ]);
    for (const c of COMMANDS) expect(decodeStoredCommand(JSON.stringify(c))).toEqual(c);
  });

  const refused: [string, string, string][] = [
    ['not JSON', '{', 'stored command is not JSON'],
    ['not an object', '[1]', 'stored command is not an object'],
    ['a legacy row with a field of the wrong type', '{"kind":"stopSession","sessionId":"s","reason":"r","graceMs":"10"}', 'stored stopSession command does not match the contract'],
    ['a legacy row with an extra field', '{"kind":"deleteBuild","uploadId":"u","force":true}', 'stored deleteBuild command does not match the contract'],
    ['a legacy row missing a field', '{"kind":"stopSession","sessionId":"s","reason":"r"}', 'stored stopSession command does not match the contract'],
    ['a proto row with an extra field', '{"deleteBuild":{"uploadId":"u"},"seq":3}', 'stored deleteBuild command does not match the contract'],
  ];
  for (const [what, payload, message] of refused) {
    it(`refuses ${what}`, () => {
      expect(() => decodeStoredCommand(payload)).toThrow(new AgentContractError('INVALID_MESSAGE', message));
    });
  }

  it('refuses a row without a known kind with UNKNOWN_COMMAND', () => {
    for (const payload of ['{}', '{"kind":"rebootWorker"}', '{"rebootWorker":{}}']) {
      expect(() => decodeStoredCommand(payload)).toThrow(new AgentContractError('UNKNOWN_COMMAND', 'command (stored) has no kind'));
    }
  });

  it('refuses a stored codec this version does not know with UNSUPPORTED_CODEC', () => {
    expect(() => decodeStoredCommand('{"startSession":{"sessionId":"s","codec":"CODEC_H265"}}')).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_CODEC' }) as Error);
    expect(() => decodeStoredCommand('{"kind":"startSession","sessionId":"s","codec":"H265"}')).toThrow(expect.objectContaining({ code: 'UNSUPPORTED_CODEC' }) as Error);
  });
});
