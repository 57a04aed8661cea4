// What other tests and the demo use from the mock Unreal app: launching it with the real Unreal
// command line, its log lines and failure-mode switches, and the browser-free signalling stub and
// werift player that talk to it.
export { FAILURE_ENV } from './command-line';
export { encodeToStreamer, FROM_STREAMER, TO_STREAMER } from './data-channel-protocol';
export { DEFAULT_FIXTURE_PATH } from './fixture';
export {
  MOCK_UNREAL_BIN,
  MOCK_UNREAL_LOG,
  spawnMockUnreal,
  unrealCommandLine,
  type ExitInfo,
  type MockUnrealProcess,
  type UnrealCommandLineOptions,
} from './mock-unreal-process';
export { SignallingStub, type JsonMessage } from './signalling-stub';
export { WeriftPlayer } from './werift-player';
