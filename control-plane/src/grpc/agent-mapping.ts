// The control plane's gRPC edge of the agent contract: the contract (@pixelfleet/proto's
// agent-contract.ts) converts each message; here a message that does not decode becomes an
// AgentProtocolError, which ends the stream with INVALID_ARGUMENT and its text.
import { AgentContractError, fromAgentFromProto, helloFromProto, toAgentToProto, type agentV1, type FromAgent, type ToAgent } from '@pixelfleet/proto';
import type { LogUploadPart } from '../sessions/log-uploads';

/** A message the agent sent that cannot be understood; the stream is ended with its text. */
export class AgentProtocolError extends Error {
  override readonly name = 'AgentProtocolError';
}

/** The Hello, first message of every stream; it always decodes. */
export { helloFromProto };

/** Everything after the Hello. A second Hello, an empty message or one that does not decode (an unknown ack phase or event kind) is a protocol error. */
export function fromAgentProto(m: agentV1.ConnectRequest): FromAgent {
  try {
    return fromAgentFromProto(m);
  } catch (err) {
    if (err instanceof AgentContractError) throw new AgentProtocolError(err.message);
    throw err;
  }
}

export function toAgentProto(m: ToAgent): agentV1.ConnectResponse {
  return toAgentToProto(m);
}

/** The parts of a log upload stream as domain values; an empty part is a protocol error. */
export async function* logUploadParts(requests: AsyncIterable<agentV1.UploadSessionLogsRequest>): AsyncGenerator<LogUploadPart> {
  for await (const r of requests) {
    const part = r.part;
    switch (part?.$case) {
      case 'header':
        yield { type: 'header', sessionId: part.value.sessionId, fileName: part.value.fileName, fileSize: part.value.fileSize };
        break;
      case 'chunk':
        yield { type: 'chunk', bytes: part.value };
        break;
      case undefined:
        throw new AgentProtocolError('empty upload message');
      default: {
        const unreachable: never = part;
        throw new AgentProtocolError(`unknown upload part ${String(unreachable)}`);
      }
    }
  }
}
