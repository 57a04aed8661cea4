// The one door of @pixelfleet/proto: the generated AgentService and AdminService code, each as
// a namespace; the agent contract in domain terms (agent-contract.ts) with the launch-argument
// rule and the stored form of a command; and the descriptor set that gRPC server reflection serves.
import { fileURLToPath } from 'node:url';
import * as agentV1 from './gen/pixelfleet/agent/v1/agent';
import * as adminV1 from './gen/pixelfleet/admin/v1/admin';

export { agentV1, adminV1 };
export {
  CODECS,
  AgentContractError,
  agentCommandToProto,
  agentCommandFromProto,
  commandToProto,
  commandFromProto,
  ackToProto,
  ackFromProto,
  sessionEventToProto,
  sessionEventFromProto,
  signalToProto,
  signalFromProto,
  helloToProto,
  helloFromProto,
  heartbeatToProto,
  heartbeatFromProto,
  welcomeToProto,
  welcomeFromProto,
  toAgentToProto,
  toAgentFromProto,
  fromAgentToProto,
  fromAgentFromProto,
  type Codec,
  type StartSessionCommand,
  type StopSessionCommand,
  type PrepareBuildCommand,
  type DeleteBuildCommand,
  type AgentCommand,
  type AgentCommandKind,
  type DeliveredCommand,
  type AckPhase,
  type AgentAck,
  type SessionEventKind,
  type AgentSessionEvent,
  type SignalEnvelope,
  type RelayCounters,
  type SessionActivity,
  type RunningSession,
  type CachedBuild,
  type AgentHello,
  type Heartbeat,
  type Welcome,
  type ToAgent,
  type FromAgent,
} from './agent-contract';
export { encodeStoredCommand, decodeStoredCommand } from './stored-command';
export { REGIONS, REGION_CODES, isRegionCode, regionDisplayName, type RegionCode } from './regions';
export { checkLaunchArgs, MAX_LAUNCH_ARGS, MAX_LAUNCH_ARG_CHARS, PROTECTED_LAUNCH_ARG_NAMES, type LaunchArgRefusal } from './launch-args';

/** Absolute path of the FileDescriptorSet built from proto/ (for @grpc/reflection). */
export const descriptorSetPath: string = fileURLToPath(new URL('../descriptor.binpb', import.meta.url));
