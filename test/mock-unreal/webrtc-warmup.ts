// The mock app's WebRTC stack made ready while its level "loads" (-MockStartupSeconds): one
// in-process handshake between two werift peers on 127.0.0.1 (offer/answer, ICE, DTLS as client and
// as server, SCTP and a data channel, SRTP). A packaged Unreal app runs libwebrtc, native code whose
// first handshake costs what its hundredth does; werift's first one in a fresh Node process also
// compiles its code and makes the DTLS certificate every later peer shares. Measured in bench:stream
// (a): ~100 ms of createOffer and ~130 ms of a DTLS reply that the real app would not spend, all of
// it counted against the relay in "start + 400 ms".
import { MediaStreamTrack, RTCPeerConnection, RtpHeader, RtpPacket } from 'werift';
import { askNoDefaultStun, streamerPeerConfig } from './player-session';

/** Packets sent once the peers are up: enough to run SRTP and werift's send path hot. */
const WARMUP_RTP_PACKETS = 20;
const WARMUP_PAYLOAD_BYTES = 1_100;

/** Resolves once a handshake and some media went through; rejects after timeoutMs. Never leaves a peer open. */
export async function warmWebRtcStack(timeoutMs: number): Promise<void> {
  const offerer = new RTCPeerConnection(streamerPeerConfig(undefined));
  const answerer = new RTCPeerConnection(streamerPeerConfig(undefined));
  let timer: NodeJS.Timeout | undefined;
  try {
    const track = new MediaStreamTrack({ kind: 'video' });
    const { sender } = offerer.addTransceiver(track, { direction: 'sendonly' });
    const channel = offerer.createDataChannel('warmup', { ordered: true });
    const received = new Promise<void>((resolve) => {
      answerer.onTrack.subscribe((remote) => remote.onReceiveRtp.subscribe(() => resolve()));
    });
    const channelOpen = new Promise<void>((resolve) => {
      channel.stateChanged.subscribe((state) => {
        if (state === 'open') resolve();
      });
    });
    const handshake = (async () => {
      askNoDefaultStun(offerer);
      await offerer.setLocalDescription(await offerer.createOffer());
      await answerer.setRemoteDescription(offerer.localDescription!);
      askNoDefaultStun(answerer);
      await answerer.setLocalDescription(await answerer.createAnswer());
      // werift writes every gathered candidate into the description: no trickling needed.
      await offerer.setRemoteDescription(answerer.localDescription!);
      await channelOpen;
      for (let i = 0; i < WARMUP_RTP_PACKETS; i++) {
        const header = new RtpHeader({ payloadType: 96, sequenceNumber: i, timestamp: i * 3000, marker: true });
        await sender.sendRtp(new RtpPacket(header, Buffer.alloc(WARMUP_PAYLOAD_BYTES)));
      }
      await received;
    })();
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the WebRTC warm-up took over ${timeoutMs} ms`)), timeoutMs);
    });
    await Promise.race([handshake, deadline]);
  } finally {
    clearTimeout(timer);
    await Promise.allSettled([offerer.close(), answerer.close()]);
  }
}

