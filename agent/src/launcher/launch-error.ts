// Why a session's app could not be launched, with a stable code the session manager passes on
// (as a CommandFailure code or in a launchFailed event).

export type LaunchErrorCode =
  /** A launch argument is not of the `-Name` / `-Name=value` form or names a protected argument. */
  | 'INVALID_LAUNCH_ARGS'
  /** A session setting (resolution, fps, bitrate, codec, ids, paths) is out of range. */
  | 'INVALID_SETTINGS'
  /** The build holds no app binary this agent knows how to start. */
  | 'EXECUTABLE_NOT_FOUND'
  /** The build holds more than one candidate binary. */
  | 'AMBIGUOUS_EXECUTABLE'
  /** Not on Windows and no launcher.command configured: nothing can run the build. */
  | 'NO_LAUNCH_COMMAND'
  /** The app could not be recorded in the data dir (disk full, no permission): it is not started, since nothing could find it after an agent crash. */
  | 'CANNOT_RECORD_APP'
  /** Windows: the app-job launcher (npm run build:app-job) is not beside the agent's code: no app runs outside a job of its own. */
  | 'NO_APP_JOB';

export class LaunchError extends Error {
  override readonly name = 'LaunchError';
  constructor(
    readonly code: LaunchErrorCode,
    message: string,
  ) {
    super(message);
  }
}
