// Agent parts for tests and benchmarks outside this package (`@pixelfleet/agent/test-support`):
// the relay alone, the SDP steps a sender goes through, and the werift stand-ins for the Unreal
// app and a viewer with a real H.264 stream, the one-file log upload the spool uses, and the CLI's
// command table (the help test walks every command in it). Not in the door: the agent itself needs
// none of it.
export { SessionRelay, type RelayOptions, type RelayStats } from './relay/session-relay';
export { addBitrateHints, planStreamerOffer, type BitrateHints } from './relay/ingest-sdp';
export { FakeApp, loopbackPeer } from './relay/test-support/fake-app';
export { FakeViewer } from './relay/test-support/fake-viewer';
export { accessUnits, packetizeAccessUnit, type H264RtpPayload } from './relay/test-support/h264-fixture';
export { uploadSessionLog } from './link/log-upload';
export { createAgentClient } from './link/control-link';
export { LogUploadRefused } from './logs/spool-uploader';
export { AGENT_CLI } from './main';
export { parseRtcpStrictly, MalformedRtcp, type RtcpBlock } from './relay/test-support/strict-rtcp';
export { captureRtcp, type RtcpCapture } from './relay/test-support/rtcp-capture';
export { AGENT_ENV_LEAVES } from './config';
