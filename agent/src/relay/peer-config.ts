// werift settings for both legs (werift-notes §7.3). Ingest (loopback): no ICE servers, never
// werift's default public STUN (withoutWeriftDefaultStun); loopback gathered explicitly. Viewers:
// the project's STUN/TURN and port range. Both: max-bundle, IPv4 only.
import { RTCRtpCodecParameters, useFIR, useH264, useNACK, useOPUS, usePLI, useREMB, type RTCPeerConnection, type RTCPeerConnectionConfig } from 'werift';
import { RELAY_H264 } from './ingest-sdp';

export interface RelayIceServer {
  urls: string | string[];
  username?: string;
  credential?: string;
}

/** Payload types of the viewer-facing offer. */
export const VIEWER_VIDEO_PAYLOAD_TYPE = 96;
export const VIEWER_AUDIO_PAYLOAD_TYPE = 111;

export const LOOPBACK = '127.0.0.1';

/**
 * The viewer's only video codec: H.264 42e01f packetization-mode=1 (what the ingest forces the app
 * to send), with level-asymmetry-allowed=1 like every browser offers it, and the feedback the relay
 * handles: NACK (werift retransmits per leg), PLI and FIR (forwarded to the app), REMB (fed back).
 */
export function viewerVideoCodec(): ReturnType<typeof useH264> {
  return useH264({
    payloadType: VIEWER_VIDEO_PAYLOAD_TYPE,
    rtcpFeedback: [useNACK(), usePLI(), useFIR(), useREMB()],
    parameters: `profile-level-id=${RELAY_H264.profileLevelId};packetization-mode=${RELAY_H264.packetizationMode};level-asymmetry-allowed=1`,
  });
}

export function ingestPeerConfig(): RTCPeerConnectionConfig {
  return {
    // Matched by mime type against the narrowed offer (ingest-sdp.ts); werift then answers with the
    // app's own payload type, parameters and feedback. No header extensions: none is needed, and
    // transport-wide-cc stalls libwebrtc's estimate at 300 kbps (werift-notes §5.7).
    // RTX is matched the same way (its apt must name the H.264 format kept): NACKed packets come
    // back on the app's RTX SSRC and werift's receiver unwraps them.
    codecs: { video: [useH264(), new RTCRtpCodecParameters({ mimeType: 'video/rtx', clockRate: 90_000 })], audio: [useOPUS()] },
    headerExtensions: { video: [], audio: [] },
    iceServers: [],
    bundlePolicy: 'max-bundle',
    iceUseIpv4: true,
    iceUseIpv6: false,
    iceAdditionalHostAddresses: [LOOPBACK],
  };
}

export interface ViewerNetwork {
  iceServers: RelayIceServer[];
  hostAddresses: string[];
  portRange?: { min: number; max: number };
}

export function viewerPeerConfig(network: ViewerNetwork): RTCPeerConnectionConfig {
  return {
    codecs: { video: [viewerVideoCodec()], audio: [useOPUS({ payloadType: VIEWER_AUDIO_PAYLOAD_TYPE })] },
    headerExtensions: { video: [], audio: [] },
    iceServers: network.iceServers.map((s) => ({ ...s })),
    bundlePolicy: 'max-bundle',
    iceUseIpv4: true,
    iceUseIpv6: false,
    iceAdditionalHostAddresses: [...new Set([LOOPBACK, ...network.hostAddresses])],
    icePortRange: network.portRange ? [network.portRange.min, network.portRange.max] : undefined,
  };
}

/** A STUN URL among ICE servers: werift queries the first one it finds. */
function namesStunServer(iceServers: readonly RelayIceServer[]): boolean {
  return iceServers.some((server) => (Array.isArray(server.urls) ? server.urls : [server.urls]).some((url) => /^stuns?:/i.test(url)));
}

/**
 * werift (0.24, its ICE `Connection`) queries stun.l.google.com:19302 whenever its configuration
 * names no STUN server, `iceServers: []` included (werift-webrtc issue #691), and
 * setLocalDescription waits for the answer: every offer and answer of this relay then asked Google
 * for this host's address, and waited up to 5 s where UDP to it is dropped. A peer given no STUN
 * server asks none, as libwebrtc does. Call it after the peer's transport exists (the offerer: after
 * its first transceiver; the answerer: after setRemoteDescription) and before setLocalDescription.
 */
export function withoutWeriftDefaultStun(pc: RTCPeerConnection): void {
  if (namesStunServer(pc.config.iceServers ?? [])) return;
  for (const transport of pc.iceTransports) transport.connection.stunServer = undefined;
}
