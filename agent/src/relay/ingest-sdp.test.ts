import { describe, expect, it } from 'vitest';
import { addBitrateHints, answerAsDtlsServer, planStreamerOffer } from './ingest-sdp';
import { fmtps, mediaFormats, mediaKind, parseSdp, rtpmaps } from './sdp-text';

const offer = (video: string[], audio: string[] = []): string =>
  [
    'v=0',
    'o=- 1 2 IN IP4 127.0.0.1',
    's=-',
    't=0 0',
    'a=group:BUNDLE 0 1',
    ...(audio.length > 0 ? ['m=audio 9 UDP/TLS/RTP/SAVPF 111 63 126', 'c=IN IP4 0.0.0.0', 'a=mid:a', ...audio] : []),
    ...video,
    'm=application 9 UDP/DTLS/SCTP webrtc-datachannel',
    'a=mid:1',
    'a=sctp-port:5000',
    '',
  ].join('\r\n');

const LIBWEBRTC_VIDEO = [
  'm=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 106 107 127',
  'c=IN IP4 0.0.0.0',
  'a=mid:0',
  'a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01',
  'a=sendonly',
  'a=rtcp-fb:* nack',
  'a=rtpmap:96 VP8/90000',
  'a=rtcp-fb:96 transport-cc',
  'a=rtpmap:97 rtx/90000',
  'a=fmtp:97 apt=96',
  'a=rtpmap:102 H264/90000',
  'a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f',
  'a=rtpmap:103 rtx/90000',
  'a=fmtp:103 apt=102',
  'a=rtpmap:106 H264/90000',
  'a=rtcp-fb:106 goog-remb',
  'a=rtcp-fb:106 transport-cc',
  'a=rtcp-fb:106 ccm fir',
  'a=rtcp-fb:106 nack',
  'a=rtcp-fb:106 nack pli',
  'a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42E01F',
  'a=rtpmap:107 rtx/90000',
  'a=fmtp:107 apt=106',
  'a=rtpmap:127 H264/90000',
  'a=fmtp:127 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f',
  'a=ssrc-group:FID 1111 2222',
  'a=ssrc:1111 cname:x',
  'a=ssrc:2222 cname:x',
];

const OPUS_AUDIO = ['a=rtpmap:111 opus/48000/2', 'a=fmtp:111 minptime=10;useinbandfec=1', 'a=rtpmap:63 red/48000/2', 'a=rtpmap:126 telephone-event/8000'];

describe('planStreamerOffer', () => {
  it('keeps only H.264 42e01f packetization-mode=1 (profile-level-id case-insensitive) with its feedback and its RTX format, minus transport-cc', () => {
    const plan = planStreamerOffer(offer(LIBWEBRTC_VIDEO, OPUS_AUDIO));
    expect(plan).toMatchObject({ videoPayloadType: 106, videoRtxPayloadType: 107, pli: true, fir: true, audioPayloadType: 111, videoSsrc: 1111 });
    const sections = parseSdp(plan.sdp).media;
    const video = sections.find((s) => mediaKind(s) === 'video') ?? [];
    expect(mediaFormats(video)).toEqual([106, 107]);
    expect([...rtpmaps(video).keys()]).toEqual([106, 107]);
    expect([...fmtps(video).keys()]).toEqual([106, 107]);
    expect(fmtps(video).get(107)?.get('apt')).toBe('106');
    expect(video.filter((l) => l.startsWith('a=rtcp-fb:'))).toEqual(['a=rtcp-fb:* nack', 'a=rtcp-fb:106 goog-remb', 'a=rtcp-fb:106 ccm fir', 'a=rtcp-fb:106 nack', 'a=rtcp-fb:106 nack pli']);
    // Everything else in the section is untouched.
    expect(video).toContain('a=ssrc-group:FID 1111 2222');
    const audio = sections.find((s) => mediaKind(s) === 'audio') ?? [];
    expect(mediaFormats(audio)).toEqual([111]);
    expect(audio).toContain('a=fmtp:111 minptime=10;useinbandfec=1');
    expect(sections.find((s) => mediaKind(s) === 'application')).toEqual(['m=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'a=mid:1', 'a=sctp-port:5000']);
  });

  it('keeps no RTX format when the app offers none for the chosen H.264', () => {
    const withoutRtx = LIBWEBRTC_VIDEO.filter((l) => !/:107 /.test(l)).map((l) => l.replace(' 106 107 ', ' 106 '));
    const plan = planStreamerOffer(offer(withoutRtx));
    expect(plan.videoRtxPayloadType).toBeUndefined();
    expect(mediaFormats(parseSdp(plan.sdp).media[0] ?? [])).toEqual([106]);
  });

  it('refuses an offer whose H.264 is not 42e01f with packetization-mode=1, naming what was offered', () => {
    const video = LIBWEBRTC_VIDEO.filter((l) => !/:106 |:107 /.test(l)).map((l) => l.replace(' 106 107', ''));
    expect(() => planStreamerOffer(offer(video))).toThrow(
      expect.objectContaining({
        code: 'UNSUPPORTED_CODEC',
        message: expect.stringContaining('(offered: VP8/90000, H264/90000 profile-level-id=42001f packetization-mode=1, H264/90000 profile-level-id=4d001f packetization-mode=1)') as unknown,
      }),
    );
  });

  it('refuses packetization-mode 0 and a missing video section, and audio without Opus', () => {
    const mode0 = LIBWEBRTC_VIDEO.map((l) => l.replace('packetization-mode=1;profile-level-id=42E01F', 'packetization-mode=0;profile-level-id=42e01f'));
    expect(() => planStreamerOffer(offer(mode0))).toThrow(/packetization-mode=1/);
    expect(() => planStreamerOffer(offer([]))).toThrow(/no video section/);
    expect(() => planStreamerOffer(offer(LIBWEBRTC_VIDEO, ['a=rtpmap:111 PCMU/8000']))).toThrow(/audio without Opus/);
  });
});

describe('addBitrateHints', () => {
  const answer = [
    'v=0',
    's=-',
    'm=video 9 UDP/TLS/RTP/SAVPF 106',
    'c=IN IP4 0.0.0.0',
    'b=AS:300',
    'a=rtpmap:106 H264/90000',
    'a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f;x-google-max-bitrate=300',
    '',
  ].join('\r\n');

  it('sets b=AS and the x-google bitrates in kbps, replacing earlier ones', () => {
    const hinted = parseSdp(addBitrateHints(answer, 106, { startBps: 2_000_000, minBps: 500_000, maxBps: 20_000_000 })).media[0];
    expect(hinted).toEqual([
      'm=video 9 UDP/TLS/RTP/SAVPF 106',
      'c=IN IP4 0.0.0.0',
      'b=AS:20000',
      'a=rtpmap:106 H264/90000',
      'a=fmtp:106 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f;x-google-min-bitrate=500;x-google-start-bitrate=2000;x-google-max-bitrate=20000',
    ]);
  });

  it('adds an fmtp line when there is none', () => {
    const bare = answer.replace(/a=fmtp:[^\r]*\r\n/, '');
    expect(addBitrateHints(bare, 106, { startBps: 1_000_000, minBps: 1_000_000, maxBps: 1_000_000 })).toContain(
      'a=rtpmap:106 H264/90000\r\na=fmtp:106 x-google-min-bitrate=1000;x-google-start-bitrate=1000;x-google-max-bitrate=1000\r\n',
    );
  });
});

describe('answerAsDtlsServer', () => {
  it('turns every a=setup:active into passive and leaves the rest byte for byte', () => {
    const sdp = ['v=0', 'm=video 9 UDP/TLS/RTP/SAVPF 96', 'a=setup:active', 'a=mid:0', 'm=application 9 UDP/DTLS/SCTP webrtc-datachannel', 'a=setup:active', ''].join('\r\n');
    expect(answerAsDtlsServer(sdp)).toBe(sdp.replaceAll('a=setup:active', 'a=setup:passive'));
    expect(answerAsDtlsServer(sdp.replaceAll('\r\n', '\n'))).toBe(sdp.replaceAll('\r\n', '\n').replaceAll('a=setup:active', 'a=setup:passive'));
    const already = sdp.replaceAll('a=setup:active', 'a=setup:passive');
    expect(answerAsDtlsServer(already)).toBe(already);
  });
});
