// werift settings (werift-notes §7.3) and the state tables of both legs.
import { describe, expect, it } from 'vitest';
import { ingestPeerConfig, viewerPeerConfig, VIEWER_VIDEO_PAYLOAD_TYPE } from './peer-config';
import { INGEST_TRANSITIONS, type IngestState } from './ingest-leg';
import { VIEWER_TRANSITIONS, type ViewerState } from './viewer-leg';

describe('werift settings', () => {
  it('ingest: no ICE servers (never werift’s default public STUN), max-bundle, IPv4 only, loopback gathered, no header extensions, H.264 with RTX', () => {
    const config = ingestPeerConfig();
    expect(config.iceServers).toEqual([]);
    expect(config.bundlePolicy).toBe('max-bundle');
    expect(config.iceUseIpv4).toBe(true);
    expect(config.iceUseIpv6).toBe(false);
    expect(config.iceAdditionalHostAddresses).toEqual(['127.0.0.1']);
    expect(config.headerExtensions).toEqual({ video: [], audio: [] });
    expect(config.codecs?.video?.map((c) => c.mimeType.toLowerCase())).toEqual(['video/h264', 'video/rtx']);
  });

  it('viewer: the project’s ICE servers and port range, loopback always among the host addresses, one H.264 42e01f format with its feedback', () => {
    const turn = { urls: ['turn:turn.example:3478?transport=udp'], username: 'u', credential: 'p' };
    const config = viewerPeerConfig({ iceServers: [turn], hostAddresses: ['10.0.0.5', '127.0.0.1'], portRange: { min: 40_000, max: 40_099 } });
    expect(config.iceServers).toEqual([turn]);
    expect(config.bundlePolicy).toBe('max-bundle');
    expect(config.iceUseIpv4).toBe(true);
    expect(config.iceUseIpv6).toBe(false);
    expect(config.iceAdditionalHostAddresses).toEqual(['127.0.0.1', '10.0.0.5']);
    expect(config.icePortRange).toEqual([40_000, 40_099]);
    const [h264, ...others] = config.codecs?.video ?? [];
    expect(others).toEqual([]);
    expect(h264?.payloadType).toBe(VIEWER_VIDEO_PAYLOAD_TYPE);
    expect(h264?.parameters).toBe('profile-level-id=42e01f;packetization-mode=1;level-asymmetry-allowed=1');
    expect(h264?.rtcpFeedback.map((f) => [f.type, f.parameter ?? ''].join(' ').trim())).toEqual(['nack', 'nack pli', 'ccm fir', 'goog-remb']);
    expect(viewerPeerConfig({ iceServers: [], hostAddresses: [] }).iceAdditionalHostAddresses).toEqual(['127.0.0.1']);
    expect(viewerPeerConfig({ iceServers: [], hostAddresses: [] }).icePortRange).toBeUndefined();
  });
});

describe('state tables', () => {
  it('viewer: forward only, every state can end, closed is final', () => {
    const order: ViewerState[] = ['offering', 'offered', 'answered', 'connected', 'disconnected', 'closed'];
    for (const from of order) {
      for (const to of order) {
        const allowed = VIEWER_TRANSITIONS[from].includes(to);
        const expected = from !== 'closed' && (to === 'closed' || (from !== 'disconnected' && (to === 'disconnected' || order.indexOf(to) === order.indexOf(from) + 1)));
        expect(allowed, `${from} → ${to}`).toBe(expected);
      }
    }
  });

  it('ingest: forward only, every state can end, closed is final', () => {
    const order: IngestState[] = ['new', 'answering', 'answered', 'connected', 'failed', 'closed'];
    for (const from of order) {
      for (const to of order) {
        const allowed = INGEST_TRANSITIONS[from].includes(to);
        const expected = from !== 'closed' && (to === 'closed' || (from !== 'failed' && (to === 'failed' || order.indexOf(to) === order.indexOf(from) + 1)));
        expect(allowed, `${from} → ${to}`).toBe(expected);
      }
    }
  });
});
