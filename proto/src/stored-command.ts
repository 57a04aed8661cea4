// How a command is stored in the control plane's worker_commands.payload and read back: the proto
// JSON of the command's kind (`{"startSession":{…}}`), decoded through the agent contract and
// checked to be exactly what this version writes. Rows written before this encoding (the domain
// object as JSON, `{"kind":"startSession","codec":"H264",…}`) still decode, with the same check.
import { isDeepStrictEqual } from 'node:util';
import * as agentV1 from './gen/pixelfleet/agent/v1/agent';
import { AgentContractError, agentCommandFromProto, agentCommandToProto, type AgentCommand } from './agent-contract';

/** Proto JSON of the command's kind; zero values are left out, as proto JSON does. */
function protoJson(command: AgentCommand): unknown {
  return agentV1.Command.toJSON({ seq: 0, commandId: '', connectionEpoch: 0, kind: agentCommandToProto(command) });
}

export function encodeStoredCommand(command: AgentCommand): string {
  return JSON.stringify(protoJson(command));
}

/**
 * The command a stored payload holds.
 * @throws AgentContractError INVALID_MESSAGE when the payload is not one this or the previous
 *   version wrote (not JSON, unknown fields, wrong types); UNKNOWN_COMMAND / UNSUPPORTED_CODEC as
 *   the contract decodes it.
 */
export function decodeStoredCommand(payload: string): AgentCommand {
  let stored: unknown;
  try {
    stored = JSON.parse(payload);
  } catch {
    throw new AgentContractError('INVALID_MESSAGE', 'stored command is not JSON');
  }
  if (typeof stored !== 'object' || stored === null || Array.isArray(stored)) throw new AgentContractError('INVALID_MESSAGE', 'stored command is not an object');
  const legacy = 'kind' in stored;
  const command = agentCommandFromProto(agentV1.Command.fromJSON(legacy ? legacyToProtoJson(stored as Record<string, unknown>) : stored).kind, '(stored)');
  const written: unknown = legacy ? withoutLaterFields(JSON.parse(JSON.stringify(command)) as Record<string, unknown>, stored) : protoJson(command);
  if (!isDeepStrictEqual(written, stored)) throw new AgentContractError('INVALID_MESSAGE', `stored ${command.kind} command does not match the contract`);
  return command;
}

/** Fields commands gained after the legacy format was last written: a legacy row has none of them. */
const FIELDS_AFTER_LEGACY = ['warm'];

/** The legacy form of a decoded command, less the fields the legacy format never had (`warm`: false for such a row). */
function withoutLaterFields(written: Record<string, unknown>, stored: object): Record<string, unknown> {
  for (const field of FIELDS_AFTER_LEGACY) if (!(field in stored)) delete written[field];
  return written;
}

/** `{"kind":"startSession","codec":"H264",…}` → `{"startSession":{"codec":"CODEC_H264",…}}`. */
function legacyToProtoJson(stored: Record<string, unknown>): unknown {
  const { kind, ...fields } = stored;
  if (typeof kind !== 'string') throw new AgentContractError('INVALID_MESSAGE', 'stored command has no kind');
  if (typeof fields['codec'] === 'string') fields['codec'] = `CODEC_${fields['codec']}`;
  return { [kind]: fields };
}
