// Test support: real-looking signalling payloads in the shapes of pixel-streaming.md §1.3
// (an Unreal offer, a munged frontend answer, trickled host and relay candidates).

/** An abridged PixelStreaming2 offer: H.264 video, Opus audio, one data channel. */
export const UE_OFFER_SDP = [
  'v=0',
  'o=- 4611731400430051336 2 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0 1 2',
  'a=extmap-allow-mixed',
  'a=msid-semantic: WMS pixelstreaming_av_stream_id',
  'm=video 9 UDP/TLS/RTP/SAVPF 96 97',
  'c=IN IP4 0.0.0.0',
  'a=rtcp:9 IN IP4 0.0.0.0',
  'a=ice-ufrag:Yx3k',
  'a=ice-pwd:Fq0kZ7l4mJ8pB1vW2cT9sR6n',
  'a=ice-options:trickle',
  'a=fingerprint:sha-256 4F:2C:1A:9E:77:10:3B:8D:C5:66:AA:01:F3:92:4E:0D:B8:7C:21:5A:E9:13:6F:D0:88:47:2B:9C:3E:71:05:AF',
  'a=setup:actpass',
  'a=mid:0',
  'a=sendonly',
  'a=rtcp-mux',
  'a=rtpmap:96 H264/90000',
  'a=fmtp:96 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f',
  'a=rtpmap:97 rtx/90000',
  'a=fmtp:97 apt=96',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111',
  'c=IN IP4 0.0.0.0',
  'a=mid:1',
  'a=sendrecv',
  'a=rtpmap:111 opus/48000/2',
  'a=fmtp:111 minptime=10;useinbandfec=1',
  'm=application 9 UDP/DTLS/SCTP webrtc-datachannel',
  'c=IN IP4 0.0.0.0',
  'a=mid:2',
  'a=sctp-port:5000',
  'a=max-message-size:262144',
  '',
].join('\r\n');

/** The frontend's answer, with its bitrate munging on the H.264 fmtp line. */
export const BROWSER_ANSWER_SDP = [
  'v=0',
  'o=- 8346410290839201554 2 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0 1 2',
  'm=video 9 UDP/TLS/RTP/SAVPF 96',
  'c=IN IP4 0.0.0.0',
  'a=ice-ufrag:pL8e',
  'a=ice-pwd:3vNq9dKx0Wm5Zr2Tb7Yc1Hs4',
  'a=setup:active',
  'a=mid:0',
  'a=recvonly',
  'a=rtpmap:96 H264/90000',
  'a=fmtp:96 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f;x-google-start-bitrate=10000;x-google-max-bitrate=100000',
  'm=audio 9 UDP/TLS/RTP/SAVPF 111',
  'a=mid:1',
  'a=rtpmap:111 opus/48000/2',
  'a=fmtp:111 maxaveragebitrate=510000;stereo=1;useinbandfec=1',
  'm=application 9 UDP/DTLS/SCTP webrtc-datachannel',
  'a=mid:2',
  'a=sctp-port:5000',
  '',
].join('\r\n');

export const HOST_CANDIDATE = {
  candidate: 'candidate:1 1 udp 2122260223 192.168.1.20 49152 typ host generation 0 ufrag Yx3k network-id 1',
  sdpMid: '0',
  sdpMLineIndex: 0,
} as const;

/** As a browser's RTCIceCandidate.toJSON() gives it, usernameFragment included. */
export const RELAY_CANDIDATE = {
  candidate: 'candidate:3 1 udp 41885439 203.0.113.7 61234 typ relay raddr 198.51.100.4 rport 50000 generation 0 ufrag pL8e network-id 1',
  sdpMid: '0',
  sdpMLineIndex: 0,
  usernameFragment: 'pL8e',
} as const;
