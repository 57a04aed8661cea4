// The one door of @pixelfleet/proto: the generated AgentService and AdminService code, each as
// a namespace, and the descriptor set that gRPC server reflection serves.
import { fileURLToPath } from 'node:url';
import * as agentV1 from './gen/pixelfleet/agent/v1/agent';
import * as adminV1 from './gen/pixelfleet/admin/v1/admin';

export { agentV1, adminV1 };

/** Absolute path of the FileDescriptorSet built from proto/ (for @grpc/reflection). */
export const descriptorSetPath: string = fileURLToPath(new URL('../descriptor.binpb', import.meta.url));
