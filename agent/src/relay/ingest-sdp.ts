// The ingest leg's SDP policy: the app's offer is narrowed before werift sees it (werift would
// accept every H.264 variant, werift-notes §5.6) to one H.264 42e01f packetization-mode=1 format
// (with its RTX format) and Opus, without transport-cc (§5.7); the answer makes the relay the DTLS
// server and gets bitrate hints for the app's encoder.
import { RelayError } from './relay-error';
import { attributePayloadType, fmtps, mediaFormats, mediaKind, parseSdp, rtpmaps, serializeSdp } from './sdp-text';

/** The only video format relayed: H.264 Constrained Baseline level 3.1, non-interleaved mode. */
export const RELAY_H264 = { profileLevelId: '42e01f', packetizationMode: '1' } as const;

export interface StreamerOfferPlan {
  /** The offer as werift must see it. */
  sdp: string;
  /** The app's payload type for H.264 42e01f packetization-mode=1 (the only one left in the offer). */
  videoPayloadType: number;
  /** The app's RTX payload type for it (apt), when offered: retransmissions come on it. */
  videoRtxPayloadType: number | undefined;
  /** The app offered `nack pli` / `ccm fir` for that payload type: the relay sends PLI / FIR. */
  pli: boolean;
  fir: boolean;
  /** The app's Opus payload type, when the offer carries an audio section. */
  audioPayloadType: number | undefined;
  /** The video SSRC the offer announces (first a=ssrc), for RTCP before the first packet arrives. */
  videoSsrc: number | undefined;
}

export interface BitrateHints {
  startBps: number;
  minBps: number;
  maxBps: number;
}

/** Narrows the app's offer; throws RelayError UNSUPPORTED_CODEC when nothing fits. */
export function planStreamerOffer(offerSdp: string): StreamerOfferPlan {
  const sdp = parseSdp(offerSdp);
  let video: { pt: number; pli: boolean; fir: boolean; ssrc: number | undefined } | undefined;
  let audioPayloadType: number | undefined;
  let videoRtx: number | undefined;
  for (const [index, section] of sdp.media.entries()) {
    const kind = mediaKind(section);
    if ((kind !== 'video' && kind !== 'audio') || isRejected(section)) continue;
    const pt = kind === 'video' ? pickH264(section) : pickOpus(section);
    if (pt === undefined) {
      throw new RelayError(
        'UNSUPPORTED_CODEC',
        kind === 'video'
          ? `The app's offer has no H.264 codec with profile-level-id=${RELAY_H264.profileLevelId} and packetization-mode=${RELAY_H264.packetizationMode} (offered: ${describeCodecs(section)})`
          : `The app's offer has audio without Opus (offered: ${describeCodecs(section)})`,
      );
    }
    // Video keeps its RTX format (apt = the chosen one): libwebrtc then resends NACKed packets on
    // their own SSRC, and werift unwraps them back into the stream.
    const rtx = kind === 'video' ? pickRtx(section, pt) : undefined;
    const narrowed = keepOnlyPayloadTypes(section, rtx === undefined ? [pt] : [pt, rtx]);
    sdp.media[index] = narrowed;
    if (kind === 'video' && video === undefined) {
      videoRtx = rtx;
      const feedback = narrowed.filter((line) => line.startsWith(`a=rtcp-fb:${pt} `) || line.startsWith('a=rtcp-fb:* '));
      const ssrc = narrowed.map((line) => /^a=ssrc:(\d+) /.exec(line)?.[1]).find((v) => v !== undefined);
      video = { pt, pli: feedback.some((l) => / nack pli$/.test(l)), fir: feedback.some((l) => / ccm fir$/.test(l)), ssrc: ssrc === undefined ? undefined : Number(ssrc) };
    }
    if (kind === 'audio') audioPayloadType ??= pt;
  }
  if (video === undefined) throw new RelayError('UNSUPPORTED_CODEC', "The app's offer has no video section");
  return { sdp: serializeSdp(sdp), videoPayloadType: video.pt, videoRtxPayloadType: videoRtx, pli: video.pli, fir: video.fir, audioPayloadType, videoSsrc: video.ssrc };
}

/**
 * Adds send-bitrate hints for the app's libwebrtc to werift's answer, in kbps as SDP wants them:
 * `b=AS:<max>` in the video section and `x-google-min-bitrate`, `x-google-start-bitrate`,
 * `x-google-max-bitrate` on the H.264 fmtp line (the same munging Epic's frontend does).
 */
export function addBitrateHints(answerSdp: string, videoPayloadType: number, bitrate: BitrateHints): string {
  const kbps = (bps: number): number => Math.max(1, Math.round(bps / 1000));
  const sdp = parseSdp(answerSdp);
  const index = sdp.media.findIndex((s) => mediaKind(s) === 'video' && rtpmaps(s).has(videoPayloadType));
  const section = sdp.media[index];
  if (section === undefined) throw new RelayError('NEGOTIATION_FAILED', `werift's answer has no video payload type ${videoPayloadType}`);
  const hints = `x-google-min-bitrate=${kbps(bitrate.minBps)};x-google-start-bitrate=${kbps(bitrate.startBps)};x-google-max-bitrate=${kbps(bitrate.maxBps)}`;
  const lines = section.filter((line) => !line.startsWith('b=AS:'));
  const fmtpAt = lines.findIndex((line) => line.startsWith(`a=fmtp:${videoPayloadType} `));
  const existing = lines[fmtpAt];
  if (existing !== undefined) {
    const kept = existing
      .slice(`a=fmtp:${videoPayloadType} `.length)
      .split(';')
      .filter((p) => p.trim() !== '' && !p.trim().toLowerCase().startsWith('x-google-'));
    lines[fmtpAt] = `a=fmtp:${videoPayloadType} ${[...kept, hints].join(';')}`;
  } else {
    const rtpmapAt = lines.findIndex((line) => line.startsWith(`a=rtpmap:${videoPayloadType} `));
    lines.splice(rtpmapAt + 1, 0, `a=fmtp:${videoPayloadType} ${hints}`);
  }
  // RFC 4566 order: m=, i=, c=, b=; the c= line is always there in werift's answers.
  const cAt = lines.findIndex((line) => line.startsWith('c='));
  lines.splice(cAt >= 0 ? cAt + 1 : 1, 0, `b=AS:${kbps(bitrate.maxBps)}`);
  sdp.media[index] = lines;
  return serializeSdp(sdp);
}

function isRejected(section: string[]): boolean {
  return /^m=\S+ 0 /.test(section[0] ?? '');
}

function pickH264(section: string[]): number | undefined {
  const maps = rtpmaps(section);
  const params = fmtps(section);
  return mediaFormats(section).find((pt) => {
    const p = params.get(pt);
    return (
      maps.get(pt)?.toLowerCase() === 'h264/90000' &&
      p?.get('profile-level-id')?.toLowerCase() === RELAY_H264.profileLevelId &&
      p.get('packetization-mode') === RELAY_H264.packetizationMode
    );
  });
}

function pickRtx(section: string[], apt: number): number | undefined {
  const maps = rtpmaps(section);
  const params = fmtps(section);
  return mediaFormats(section).find((pt) => maps.get(pt)?.toLowerCase() === 'rtx/90000' && params.get(pt)?.get('apt') === String(apt));
}

function pickOpus(section: string[]): number | undefined {
  const maps = rtpmaps(section);
  return mediaFormats(section).find((pt) => maps.get(pt)?.toLowerCase().startsWith('opus/48000'));
}

/** Drops every other payload type and transport-cc feedback from one m= section. */
function keepOnlyPayloadTypes(section: string[], pts: number[]): string[] {
  const [mLine = '', ...rest] = section;
  const head = mLine.split(' ').slice(0, 3).join(' ');
  return [
    `${head} ${pts.join(' ')}`,
    ...rest.filter((line) => {
      const owner = attributePayloadType(line);
      if (owner === undefined) return true;
      if (owner !== '*' && !pts.includes(owner)) return false;
      return !/^a=rtcp-fb:\S+ transport-cc/.test(line);
    }),
  ];
}

function describeCodecs(section: string[]): string {
  const maps = rtpmaps(section);
  const params = fmtps(section);
  const described = mediaFormats(section)
    .map((pt) => {
      const name = maps.get(pt) ?? `pt ${pt}`;
      if (/^(rtx|red|ulpfec|flexfec-03)\//i.test(name)) return undefined;
      const p = params.get(pt);
      const detail = /^h264\//i.test(name) ? ` profile-level-id=${p?.get('profile-level-id') ?? '?'} packetization-mode=${p?.get('packetization-mode') ?? '0'}` : '';
      return `${name}${detail}`;
    })
    .filter((d) => d !== undefined);
  return described.length > 0 ? described.join(', ') : 'none';
}

/**
 * The relay's answer with `a=setup:passive` where werift wrote `active`: the app becomes the DTLS
 * client. werift as a client holds its ClientHello back 100 ms after ICE connects (its RTCDtlsTransport
 * start, still in 0.25), on the path to every session's first frame; libwebrtc, the app's side, sends
 * it at once (RFC 8842 §5.3 lets the answerer take either role). Applied before setLocalDescription:
 * werift takes its role from its local answer.
 */
export function answerAsDtlsServer(answerSdp: string): string {
  return answerSdp.replace(/^a=setup:active(\r?)$/gm, 'a=setup:passive$1');
}
