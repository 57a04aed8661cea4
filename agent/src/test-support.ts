// Agent parts for tests and benchmarks outside this package (`@pixelfleet/agent/test-support`):
// the relay alone, the SDP steps a sender goes through, the relay's RTCP feedback writers, the
// control-link client and one-file log upload the spool uses, the CLI's command table (the help
// test walks every command in it), the environment keys config reads, and the mingw-w64 build of a
// Windows program (the Windows mock build's binaries). Not in the door: the agent
// itself needs none of it. The werift stand-ins built on these (fake app and viewer, H.264 stream,
// strict RTCP parser) are test code, in test/support/relay/.
export { SessionRelay, type RelayOptions, type RelayStats } from './relay/session-relay';
export { addBitrateHints, planStreamerOffer, type BitrateHints } from './relay/ingest-sdp';
export { payloadSpecificFeedback, rtcpBytes } from './relay/keyframe-request';
export { uploadSessionLog } from './link/log-upload';
export { createAgentClient } from './link/control-link';
export { LogUploadRefused } from './logs/spool-uploader';
export { AGENT_CLI } from './main';
export { AGENT_ENV_LEAVES } from './config';
export { compileWindowsProgram } from './launcher/app-job-build';
