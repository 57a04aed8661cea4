// The mock's stand-ins for what libwebrtc does and werift does not: a WebRTC stack ready before the
// first player (webrtc-warmup.ts), and a DTLS client that says hello as soon as ICE is up
// (player-session.ts sendClientHelloAtOnce).
import { afterEach, describe, expect, it } from 'vitest';
import { MediaStreamTrack, RTCPeerConnection } from 'werift';
import { askNoDefaultStun, sendClientHelloAtOnce, streamerPeerConfig } from './player-session';
import { warmWebRtcStack } from './webrtc-warmup';

const peers: RTCPeerConnection[] = [];
afterEach(async () => {
  await Promise.allSettled(peers.splice(0).map((pc) => pc.close()));
});

function peer(): RTCPeerConnection {
  const pc = new RTCPeerConnection(streamerPeerConfig(undefined));
  peers.push(pc);
  return pc;
}

/** A DTLS handshake record (content type 22) carrying a ClientHello (handshake type 1). */
const isClientHello = (data: Buffer): boolean => data[0] === 22 && data[13] === 1;

describe('the mock app as libwebrtc', () => {
  it('warms its WebRTC stack with one handshake and some media, then closes both peers', async () => {
    await expect(warmWebRtcStack(10_000)).resolves.toBeUndefined();
  });

  it('gives the warm-up up after its time with a reason', async () => {
    await expect(warmWebRtcStack(1)).rejects.toThrow('the WebRTC warm-up took over 1 ms');
  });

  it('sends its ClientHello as ICE connects, not 100 ms later as werift would, and only once', async () => {
    // The app offers (actpass); the relay answers passive, so the app is the DTLS client.
    const app = peer();
    const relay = peer();
    app.addTransceiver(new MediaStreamTrack({ kind: 'video' }), { direction: 'sendonly' });
    askNoDefaultStun(app);
    sendClientHelloAtOnce(app);
    const [transport] = app.dtlsTransports;
    const connection = transport!.iceTransport.connection;
    const hellos: Buffer[] = [];
    const send = connection.send.bind(connection);
    connection.send = (data: Buffer) => {
      if (isClientHello(data)) hellos.push(data);
      return send(data);
    };
    // Queued after sendClientHelloAtOnce's own, in the same 'connecting' dispatch: by the time it
    // runs, a hello sent "at once" has gone, and werift's 100 ms wait has not begun to run out.
    let hellosWhenConnecting: number | undefined;
    let weriftCalled!: () => void;
    const weriftsOwnCall = new Promise<void>((resolve) => (weriftCalled = resolve));
    transport!.onStateChange.subscribe((state) => {
      if (state !== 'connecting') return;
      queueMicrotask(() => {
        hellosWhenConnecting = hellos.length;
        // werift's own connect(), after its wait, reaches the stand-in's replacement.
        const socket = transport!.dtls as unknown as { connect: () => Promise<void> };
        const replacement = socket.connect;
        socket.connect = () => {
          weriftCalled();
          return replacement();
        };
      });
    });

    await app.setLocalDescription(await app.createOffer());
    await relay.setRemoteDescription(app.localDescription!);
    askNoDefaultStun(relay);
    const answer = await relay.createAnswer();
    await relay.setLocalDescription({ type: 'answer', sdp: answer.sdp.replace(/^a=setup:active/gm, 'a=setup:passive') });
    const connected = new Promise<void>((resolve) => app.connectionStateChange.subscribe((s) => s === 'connected' && resolve()));
    await app.setRemoteDescription(relay.localDescription!);
    await connected;

    expect(transport!.role).toBe('client');
    expect(hellosWhenConnecting).toBe(1);
    // The first hello, then the one carrying the relay's cookie (HelloVerifyRequest): werift's own
    // call, 100 ms after 'connecting', sent none of its own.
    await weriftsOwnCall;
    expect(hellos).toHaveLength(2);
  });
});
