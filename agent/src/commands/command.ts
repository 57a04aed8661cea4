// What the agent does with control-plane commands. The commands and acks themselves are the
// agent contract's (@pixelfleet/proto agent-contract.ts), shared with the control plane.
import type { DeleteBuildCommand, PrepareBuildCommand, StartSessionCommand, StopSessionCommand } from '@pixelfleet/proto';

/** A handler's refusal with a stable code the control plane can act on. */
export class CommandFailure extends Error {
  override readonly name = 'CommandFailure';
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** What the agent does for each command kind. Handlers must be idempotent by their key. */
export interface CommandHandlers {
  startSession(c: StartSessionCommand): Promise<void>;
  stopSession(c: StopSessionCommand): Promise<void>;
  prepareBuild(c: PrepareBuildCommand, progress: (percent: number) => void): Promise<void>;
  deleteBuild(c: DeleteBuildCommand): Promise<void>;
}
