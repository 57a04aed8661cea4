// Command handlers for an agent that has no session launcher or build cache wired in:
// session starts and build work are refused with a stable code, and stopping a session this
// agent does not run succeeds (there is nothing to stop), which keeps reconciliation honest.
import { CommandFailure, type CommandHandlers } from './command';

export function unsupportedHandlers(isRunning: (sessionId: string) => boolean): CommandHandlers {
  return {
    startSession: () => Promise.reject(new CommandFailure('UNSUPPORTED', 'this agent has no session launcher configured')),
    stopSession: (c) =>
      isRunning(c.sessionId)
        ? Promise.reject(new CommandFailure('UNSUPPORTED', 'this agent cannot stop sessions'))
        : Promise.resolve(),
    prepareBuild: () => Promise.reject(new CommandFailure('UNSUPPORTED', 'this agent has no build cache configured')),
    deleteBuild: () => Promise.resolve(),
  };
}
