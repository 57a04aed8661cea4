// The relay end to end on 127.0.0.1: a fake Unreal app (werift, real H.264 RTP, Pixel Streaming
// start-up messages) on the ingest and fake browsers (werift) as viewers.
import pino from 'pino';
import { RTCPeerConnection } from 'werift';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { APP_H264_42E01F_PT, FakeApp, INITIAL_SETTINGS, PROTOCOL_FROM_STREAMER, PROTOCOL_TO_STREAMER, STARTUP_MESSAGES, utf16Message } from '../../../test/support/relay/fake-app';
import { FakeViewer } from '../../../test/support/relay/fake-viewer';
import { captureRtcp } from '../../../test/support/relay/rtcp-capture';
import { parseRtcpStrictly } from '../../../test/support/relay/strict-rtcp';
import { connectApp, connectViewer, createRelay, relayEvents, TEST_BITRATE, until } from '../../../test/support/relay/harness';
import { fmtps, mediaFormats, mediaKind, parseSdp, rtpmaps } from './sdp-text';
import { RelayError } from './relay-error';
import type { SessionRelay } from './session-relay';
import { MAX_REMOTE_CANDIDATES } from './viewer-leg';
import { INGEST_RECV_BUFFER_BYTES } from './socket-buffers';
import { MAX_RESENDS_PER_PACKET } from './send-history';
import { readFileSync } from 'node:fs';
import dns from 'node:dns';
import { ManualClock } from '@pixelfleet/common';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function setup(overrides: Parameters<typeof createRelay>[0] = {}): ReturnType<typeof createRelay> {
  const created = createRelay(overrides);
  cleanups.push(async () => {
    created.relay.close();
    await created.relay.whenClosed();
  });
  return created;
}

function app(options?: ConstructorParameters<typeof FakeApp>[0]): FakeApp {
  const a = new FakeApp(options);
  cleanups.push(() => a.close());
  return a;
}

function viewer(options?: ConstructorParameters<typeof FakeViewer>[0]): FakeViewer {
  const v = new FakeViewer(options);
  cleanups.push(() => v.close());
  return v;
}

function videoSection(sdp: string): string[] {
  const section = parseSdp(sdp).media.find((s) => mediaKind(s) === 'video');
  if (!section) throw new Error('no video section');
  return section;
}

async function connectedViewer(relay: SessionRelay, id: string, options?: ConstructorParameters<typeof FakeViewer>[0]): Promise<FakeViewer> {
  const v = viewer(options);
  let connected = false;
  const off = relay.on('viewerConnected', (playerId) => {
    if (playerId === id) connected = true;
  });
  await connectViewer(relay, id, v);
  await until(() => connected, [relayEvents(relay)], `viewer ${id} connected`);
  off();
  return v;
}

describe('SessionRelay', () => {
  it('answers the app with exactly H.264 42e01f packetization-mode=1, bitrate hints, no transport-cc, and itself as the DTLS server', async () => {
    const { relay } = setup();
    const a = app();
    let ingestConnected = false;
    relay.on('ingestConnected', () => (ingestConnected = true));
    const answer = await connectApp(relay, a);

    const video = videoSection(answer);
    expect(mediaFormats(video)).toEqual([APP_H264_42E01F_PT]);
    expect(rtpmaps(video).get(APP_H264_42E01F_PT)?.toLowerCase()).toBe('h264/90000');
    const fmtp = fmtps(video).get(APP_H264_42E01F_PT);
    expect(fmtp?.get('profile-level-id')).toBe('42e01f');
    expect(fmtp?.get('packetization-mode')).toBe('1');
    expect(fmtp?.get('x-google-min-bitrate')).toBe('500');
    expect(fmtp?.get('x-google-start-bitrate')).toBe('2000');
    expect(fmtp?.get('x-google-max-bitrate')).toBe('20000');
    expect(video).toContain('b=AS:20000');
    expect(answer).not.toMatch(/transport-cc|transport-wide-cc/);
    // The ingest gathers loopback (werift skips it unless told) and never a STUN/TURN candidate.
    expect(answer).toMatch(/a=candidate:\S+ 1 udp \d+ 127\.0\.0\.1 \d+ typ host/);
    expect(answer).not.toMatch(/typ (srflx|relay)/);
    // The relay is the DTLS server (ingest-sdp.ts answerAsDtlsServer): the app sends the ClientHello.
    expect(answer.match(/^a=setup:\w+/gm)).toEqual(parseSdp(answer).media.map(() => 'a=setup:passive'));

    await until(() => ingestConnected, [relayEvents(relay)], 'ingestConnected');
    expect(a.pc.dtlsTransports.map((t) => t.role)).toEqual(['client']);
    // The app's sender now uses the one payload type the answer named.
    expect(a.videoPayloadType).toBe(APP_H264_42E01F_PT);
  });

  it("asks no STUN server it was not given (werift's default is Google's), and the one it was given for viewers", async () => {
    // werift resolves a STUN server's name before its first request: every name it looks up is seen here.
    const lookedUp: string[] = [];
    const lookup = dns.promises.lookup.bind(dns.promises);
    const spy = vi.spyOn(dns.promises, 'lookup').mockImplementation(((host: string, options: dns.LookupOptions) => {
      lookedUp.push(host);
      return lookup(host, options);
    }) as typeof dns.promises.lookup);
    cleanups.push(() => spy.mockRestore());
    // The fake app's offer is made before the count starts: its own werift peer is not under test.
    const { relay } = setup();
    const offer = await app().offer();
    lookedUp.length = 0;
    await relay.acceptStreamerOffer(offer);
    await relay.addViewer('no-stun');
    expect(lookedUp).toEqual([]);
    const withStun = setup({ iceServers: [{ urls: 'stun:stun.pixelfleet.invalid:3478' }] }).relay;
    await withStun.addViewer('configured-stun');
    expect(lookedUp).toEqual(['stun.pixelfleet.invalid']);
  });

  it('refuses an offer without H.264 42e01f packetization-mode=1, with a reason naming what was offered', async () => {
    const { relay } = setup();
    const reasons: string[] = [];
    relay.on('ingestFailed', (reason) => reasons.push(reason));
    const offer = LIBWEBRTC_OFFER_WITHOUT_42E01F;
    const refusal = relay.acceptStreamerOffer(offer);
    await expect(refusal).rejects.toBeInstanceOf(RelayError);
    await expect(refusal).rejects.toMatchObject({ code: 'UNSUPPORTED_CODEC' });
    expect(reasons).toHaveLength(1);
    expect(reasons[0]).toContain('profile-level-id=42e01f and packetization-mode=1');
    expect(reasons[0]).toContain('VP8/90000');
    expect(reasons[0]).toContain('H264/90000 profile-level-id=42001f packetization-mode=1');
    expect(reasons[0]).toContain('H264/90000 profile-level-id=42e01f packetization-mode=0');
    expect(relay.stats().packetsIn).toBe(0);
  });

  it('forwards the app’s H.264 to two viewers: own SSRC each, the negotiated payload type, payload bytes unchanged, no header extensions', async () => {
    const { relay } = setup();
    const a = app();
    await connectApp(relay, a);
    const v1 = await connectedViewer(relay, 'v1');
    const v2 = await connectedViewer(relay, 'v2');

    const written: Buffer[] = [];
    for (let i = 0; i < 12; i++) written.push(...a.writeFrame());
    // Packets with another of the app's H.264 payload types (not in the answer) must never be relayed.
    const foreign = Buffer.from([0x41, 0xde, 0xad, 0xbe, 0xef]);
    a.writeVideo(foreign, true, 100);
    for (let i = 0; i < 3; i++) written.push(...a.writeFrame());

    const done = (): boolean => v1.video.length >= written.length && v2.video.length >= written.length;
    await until(done, [(l) => v1.onChange(l), (l) => v2.onChange(l)], 'all packets at both viewers');

    for (const v of [v1, v2]) {
      expect(v.video.map((p) => p.payload)).toEqual(written);
      // The payload type this viewer's own answer negotiated (the relay's offer: 96).
      const negotiated = mediaFormats(videoSection(v.pc.localDescription?.sdp ?? ''));
      expect(negotiated).toEqual([96]);
      expect(new Set(v.video.map((p) => p.payloadType))).toEqual(new Set(negotiated));
      expect(v.video.every((p) => p.extensions === 0)).toBe(true);
      expect(new Set(v.video.map((p) => p.ssrc)).size).toBe(1);
    }
    expect(v1.video[0]?.ssrc).not.toBe(v2.video[0]?.ssrc);
    expect(v1.video.some((p) => p.payload.equals(foreign))).toBe(false);
    // What reached the relay was only the app's negotiated payload type (werift's receiver drops
    // the others; the relay checks again before relaying).
    const stats = relay.stats();
    expect(stats.packetsInWrongPayloadType).toBe(0);
    expect(stats.viewers).toBe(2);
    expect(stats.packetsIn).toBe(written.length);
    expect(stats.packetsOut).toBe(2 * written.length);
    expect(stats.bytesIn).toBeGreaterThan(written.reduce((n, p) => n + p.length, 0));
  });

  it('relays audio (Opus) too', async () => {
    const { relay } = setup();
    const a = app();
    await connectApp(relay, a);
    const v = await connectedViewer(relay, 'v');
    const payload = Buffer.from([0xfc, 0xff, 0xfe]);
    a.writeAudio(payload);
    await until(() => v.audio.length > 0, [(l) => v.onChange(l)], 'audio at the viewer');
    expect(v.audio[0]?.payload).toEqual(payload);
    expect(v.audio[0]?.payloadType).toBe(111);
  });

  it('asks the app for a keyframe when a viewer joins and forwards its PLI and FIR as a PLI alone (rate-limited, one at a time)', async () => {
    const { relay } = setup({ keyframeMinIntervalMs: 200 });
    const a = app();
    await connectApp(relay, a);
    a.writeFrame();
    const v = await connectedViewer(relay, 'v');
    // The join request: a PLI on its own, although the app offered `ccm fir` too. The fake app reads
    // RTCP as libwebrtc does, so a malformed block beside the PLI would hide it (issue 21).
    await until(() => a.rtcp.pli >= 1, [(l) => a.onChange(l)], 'keyframe request on join');
    // The app answers with a keyframe: the relay may ask again.
    a.writeKeyframe();
    await until(() => v.video.length > 0, [(l) => v.onChange(l)], 'video at the viewer');

    const before = a.rtcp.pli;
    v.sendPli();
    await until(() => a.rtcp.pli > before, [(l) => a.onChange(l)], 'PLI forwarded to the app');
    const seen = v.video.length;
    const keyframe = a.writeKeyframe();
    await until(() => v.video.length >= seen + keyframe.length, [(l) => v.onChange(l)], 'the keyframe through the relay');
    const afterPli = a.rtcp.pli;
    v.sendFir();
    await until(() => a.rtcp.pli > afterPli, [(l) => a.onChange(l)], "the viewer's FIR forwarded to the app as a PLI");

    // No keyframe comes this time: a burst of requests while the asked-for keyframe is still on its
    // way is folded into it, with nothing trailing (the app is not made to encode frame after frame).
    const burst = { pli: a.rtcp.pli, fromViewers: relay.stats().keyframeRequestsFromViewers, coalesced: relay.stats().keyframeRequestsCoalesced };
    for (let i = 0; i < 10; i++) v.sendPli();
    await expect.poll(() => relay.stats().keyframeRequestsFromViewers, { timeout: 5_000 }).toBe(burst.fromViewers + 10);
    expect(relay.stats().keyframeRequestsCoalesced - burst.coalesced).toBe(10);
    expect(a.rtcp.pli).toBe(burst.pli);
    expect(relay.stats().keyframeRequestsToApp).toBe(a.rtcp.pli);
    expect(a.rtcp.fir).toBe(0);
    expect(a.rtcp.malformed).toEqual([]);
  });

  it("asks for a joining viewer's keyframe once its media is up, not at its offer, where the keyframe could not reach it", async () => {
    // The relay's clock stands still: a request held back by the 500 ms interval would never go
    // out, so the one that does went out at once. A request at the offer would have held it back
    // (and libwebrtc ignores a second request within 300 ms).
    const { relay } = setup({ keyframeMinIntervalMs: 500, clock: new ManualClock() });
    const a = app();
    await connectApp(relay, a);
    const v = viewer();
    a.writeFrame();
    await expect.poll(() => relay.stats().packetsIn, { timeout: 5_000 }).toBeGreaterThan(0);
    const offer = await relay.addViewer('late');
    expect(relay.stats().keyframeRequestsToApp).toBe(0); // nothing asked for while its DTLS is not up
    await relay.acceptViewerAnswer('late', await v.answer(offer));
    await until(() => a.rtcp.pli >= 1, [(l) => a.onChange(l)], "the joining viewer's keyframe request");
    a.writeKeyframe();
    await until(() => v.video.length > 0, [(l) => v.onChange(l)], 'the keyframe at the viewer');
    expect(relay.stats().keyframeRequestsToApp).toBe(1);
    expect(a.rtcp.malformed).toEqual([]);
  });

  it('asks an app that offered FIR but no PLI with a well-formed FIR of its own, its sequence number counting up', async () => {
    const { relay } = setup({ keyframeMinIntervalMs: 50 });
    const a = app({ keyframeFeedback: 'fir only' });
    await connectApp(relay, a);
    a.writeFrame();
    const v = await connectedViewer(relay, 'v');
    await until(() => a.rtcp.fir >= 1, [(l) => a.onChange(l)], 'FIR on join');
    a.writeKeyframe();
    await until(() => v.video.length > 0, [(l) => v.onChange(l)], 'video at the viewer');
    v.sendPli();
    await until(() => a.rtcp.fir >= 2, [(l) => a.onChange(l)], "the viewer's PLI forwarded to the app as a FIR");
    expect(a.rtcp.firSequenceNumbers.slice(0, 2)).toEqual([0, 1]);
    expect(a.rtcp.pli).toBe(0);
    expect(a.rtcp.malformed).toEqual([]);
  });


  it('sends REMB to the app every period: the start bitrate while nothing is known, stepping down once the viewer NACKs more than 2 % of a period', async () => {
    const { relay } = setup({ rembIntervalMs: 100 });
    const a = app();
    await connectApp(relay, a);
    a.writeFrame();
    await until(() => a.rtcp.remb.length >= 2, [(l) => a.onChange(l)], 'two REMBs');
    expect(a.rtcp.remb.slice(0, 2)).toEqual([TEST_BITRATE.startBps, TEST_BITRATE.startBps]);
    expect(relay.stats().bitratePhase).toBe('viewer-clean');

    const v = await connectedViewer(relay, 'v');
    const packets = a.writeFrame().length;
    await until(() => v.video.length >= packets, [(l) => v.onChange(l)], 'the frame at the viewer');
    // A low estimate alone (a delay-only reading on a clean leg) does not pull the app down.
    v.sendRemb(300_000);
    await until(() => a.rtcp.remb.length >= 6, [(l) => a.onChange(l)], 'more REMBs');
    expect(a.rtcp.remb.at(-1)).toBe(TEST_BITRATE.startBps);
    // The viewer NACKs each frame it gets: its leg is losing, and the app is stepped down (the test
    // stream is a few kbit/s, so to the floor). Frame and NACK fall in one REMB period or the next.
    for (let i = 0; i < 30 && a.rtcp.remb.at(-1) !== TEST_BITRATE.minBps; i++) {
      const seen = v.video.length;
      const sent = a.writeFrame().length;
      await until(() => v.video.length >= seen + sent, [(l) => v.onChange(l)], 'the frame at the viewer');
      v.sendNack(v.video.slice(-sent).map((r) => r.sequenceNumber));
      const rembs = a.rtcp.remb.length;
      await until(() => a.rtcp.remb.length > rembs, [(l) => a.onChange(l)], 'the next REMB');
    }
    expect(a.rtcp.remb.at(-1)).toBe(TEST_BITRATE.minBps);
    expect(relay.stats().rembBps).toBe(TEST_BITRATE.minBps);
    expect(['viewer-losing', 'viewer-recovering']).toContain(relay.stats().bitratePhase);
  });

  it('asks for no keyframe for a viewer that is up before the app sends video (its stream opens with one), and for one that joins later', async () => {
    const { relay } = setup({ keyframeMinIntervalMs: 50 });
    const a = app();
    await connectApp(relay, a);
    await connectedViewer(relay, 'first');
    // viewerConnected follows the viewer's DTLS (mediaReady): every request it could cause is made.
    expect(relay.stats().keyframeRequestsMade).toBe(0);
    a.writeKeyframe();
    await connectedViewer(relay, 'late');
    expect(relay.stats().keyframeRequestsMade).toBeGreaterThanOrEqual(1);
    await until(() => a.rtcp.pli >= 1, [(l) => a.onChange(l)], 'a keyframe request for the late viewer');
  });

  it("steps the REMB every 250 ms in libwebrtc's 2 s start phase, then every rembIntervalMs", async () => {
    // The relay's timers are held, not run: the schedule itself is what is checked.
    const timers: { kind: 'timeout' | 'interval'; ms: number; fn: () => void; live: boolean }[] = [];
    const hold = (kind: 'timeout' | 'interval') => (fn: () => void, ms: number) => {
      const timer = { kind, ms, fn, live: true };
      timers.push(timer);
      return { cancel: () => void (timer.live = false) };
    };
    const { relay } = setup({ clock: { now: () => Date.now(), setTimeout: hold('timeout'), setInterval: hold('interval') } });
    const a = app();
    await connectApp(relay, a);
    await until(() => a.rtcp.remb.length >= 1, [(l) => a.onChange(l)], 'the first REMB');
    const live = (kind: 'timeout' | 'interval') => timers.filter((t) => t.live && t.kind === kind).map((t) => t.ms);
    expect(live('interval')).toEqual([250]);
    expect(live('timeout')).toContain(2_000);
    timers.find((t) => t.live && t.kind === 'timeout' && t.ms === 2_000)!.fn();
    expect(live('interval')).toEqual([1_000]);
  });

  it("sizes the ingest socket's receive buffer for keyframe bursts, as far as the kernel allows", async () => {
    const { relay } = setup();
    expect(relay.stats().ingestRecvBufferBytes).toBe(0);
    await connectApp(relay, app());
    // Linux caps the request at net.core.rmem_max and reports twice what it set (its bookkeeping).
    const rmemMax = Number(readFileSync('/proc/sys/net/core/rmem_max', 'utf8'));
    expect(relay.stats().ingestRecvBufferBytes).toBe(2 * Math.min(INGEST_RECV_BUFFER_BYTES, rmemMax));
  });

  it('answers a viewer NACK from its own send history, to that viewer only; an unknown sequence number is ignored', async () => {
    const { relay } = setup();
    const a = app();
    await connectApp(relay, a);
    const v1 = await connectedViewer(relay, 'v1', { keepPayloads: true });
    const v2 = await connectedViewer(relay, 'v2', { keepPayloads: true });
    const frame = a.writeKeyframe();
    await until(() => v1.video.length >= frame.length && v2.video.length >= frame.length, [(l) => v1.onChange(l), (l) => v2.onChange(l)], 'the frame at both viewers');
    const before = { v1: v1.video.length, v2: v2.video.length, stats: relay.stats() };
    const asked = v1.video[1]!;
    // One packet it had (as if lost on the way), and one that was never sent.
    v1.sendNack([asked.sequenceNumber, (asked.sequenceNumber + 30_000) & 0xffff]);
    await until(() => v1.video.length > before.v1, [(l) => v1.onChange(l)], 'the resent packet at v1');
    const resent = v1.video.at(-1)!;
    expect(resent.sequenceNumber).toBe(asked.sequenceNumber);
    expect(resent.ssrc).toBe(asked.ssrc);
    expect(resent.payload.equals(asked.payload)).toBe(true);
    await expect.poll(() => relay.stats().viewerNackMisses).toBe(before.stats.viewerNackMisses + 1);
    expect(relay.stats().viewerNacksReceived).toBe(before.stats.viewerNacksReceived + 1);
    expect(relay.stats().viewerPacketsResent).toBe(before.stats.viewerPacketsResent + 1);
    // Nothing reached the other viewer, and the app was not asked for anything.
    expect(v2.video.length).toBe(before.v2);
    expect(a.rtcp.nacks).toEqual([]);
    // A viewer NACKing the same packet over and over gets it MAX_RESENDS_PER_PACKET times in all.
    for (let i = 0; i < 5; i++) v1.sendNack([asked.sequenceNumber]);
    await expect.poll(() => relay.stats().viewerNacksReceived).toBe(before.stats.viewerNacksReceived + 6);
    expect(relay.stats().viewerPacketsResent).toBe(before.stats.viewerPacketsResent + MAX_RESENDS_PER_PACKET);
  });

  it('NACKs a packet missing from the app at once and relays its retransmission; a packet never resent is given up and a keyframe asked for', async () => {
    const { relay } = setup({ keyframeMinIntervalMs: 50 });
    const a = app();
    await connectApp(relay, a);
    const v = await connectedViewer(relay, 'v', { keepPayloads: true });
    const [first, second, third] = a.writeKeyframe();
    await until(() => v.video.length >= 1, [(l) => v.onChange(l)], 'the keyframe at the viewer');
    const pliBefore = a.rtcp.pli;
    a.nextFrame();
    a.writeVideo(first!, false);
    const lostSeq = a.loseNextVideo(second!, false);
    a.writeVideo(third!, true);
    await until(() => a.rtcp.nacks.some((n) => n.includes(lostSeq)), [(l) => a.onChange(l)], 'a NACK for the lost packet');
    expect(relay.stats()).toMatchObject({ ingestPacketsMissing: 1, ingestNacksSent: 1 });
    const seen = v.video.length;
    a.resend(lostSeq);
    await until(() => v.video.length > seen, [(l) => v.onChange(l)], 'the retransmission at the viewer');
    expect(v.video.at(-1)!.payload.equals(second!)).toBe(true);
    await expect.poll(() => relay.stats().ingestPacketsRecovered).toBe(1);

    // Lost for good: NACKed again and again (DEFAULT_INGEST_LOSS: every 30 ms, 8 times), then given up.
    a.nextFrame();
    a.writeVideo(first!, false);
    const goneSeq = a.loseNextVideo(second!, false);
    a.writeVideo(third!, true);
    await expect.poll(() => relay.stats().ingestPacketsAbandoned, { timeout: 5_000 }).toBe(1);
    expect(a.rtcp.nacks.filter((n) => n.includes(goneSeq))).toHaveLength(8);
    await until(() => a.rtcp.pli > pliBefore, [(l) => a.onChange(l)], 'a keyframe request for the hole');
    await expect.poll(() => relay.stats().bitratePhase, { timeout: 3_000 }).toBe('recovering-relay-loss');
  });

  it("sends only RTCP that libwebrtc accepts on both legs (reports, SDES, PLI, NACK, REMB; the werift fakes' RTCP is held to it too)", async () => {
    const capture = captureRtcp();
    cleanups.push(() => capture.stop());
    const { relay } = setup({ keyframeMinIntervalMs: 50 });
    const a = app();
    await connectApp(relay, a);
    const v = await connectedViewer(relay, 'v');
    a.writeKeyframe();
    await until(() => v.video.length >= 1, [(l) => v.onChange(l)], 'the keyframe at the viewer');
    // A hole at the ingest (NACKs to the app), the viewer's own requests (PLI/FIR/NACK to the relay).
    const [first, second, third] = a.writeKeyframe();
    a.nextFrame();
    a.writeVideo(first!, false);
    a.loseNextVideo(second!, false);
    a.writeVideo(third!, true);
    v.sendPli();
    v.sendFir();
    // werift writes sender and receiver reports every 0.5–1.5 s.
    const wanted = ['SR', 'RR', 'SDES', 'PLI', 'FIR', 'NACK', 'REMB'];
    await vi.waitFor(
      () => {
        a.writeFrame();
        const counts = capture.countBlocks();
        expect(wanted.filter((name) => !(counts[name] ?? 0))).toEqual([]);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(() => capture.parseAll()).not.toThrow();
    expect(a.rtcp.malformed).toEqual([]);
    // Every packet is timed; those holding a PLI or FIR are when a keyframe was asked for.
    expect(capture.sentAtMs).toHaveLength(capture.packets.length);
    const requests = capture.packets.filter((p) => parseRtcpStrictly(p).some((b) => b.name === 'PLI' || b.name === 'FIR'));
    expect(capture.keyframeRequestTimes()).toHaveLength(requests.length);
  });

  it('passes data-channel bytes through unchanged both ways and replays the start-up messages to a late viewer', async () => {
    const { relay } = setup();
    const a = app();
    await connectApp(relay, a);
    const v1 = await connectedViewer(relay, 'v1');
    // v1 existed before the app's channel opened or right after: it gets the start-up messages once.
    await until(() => v1.messages.length >= 3, [(l) => v1.onChange(l)], 'start-up messages at v1');
    expect(v1.messages).toEqual(STARTUP_MESSAGES);

    const v2 = await connectedViewer(relay, 'v2');
    await until(() => v2.messages.length >= 3, [(l) => v2.onChange(l)], 'replayed start-up messages at v2');
    expect(v2.messages).toEqual([PROTOCOL_TO_STREAMER, PROTOCOL_FROM_STREAMER, INITIAL_SETTINGS]);

    // Viewer → app: every byte value, and a message larger than one SCTP chunk.
    const input = Buffer.from([74, 0x00, 0x80, 0xff, 0x7f, 0x01, 0x02, 0xfe]);
    const big = Buffer.alloc(40_000, 0);
    for (let i = 0; i < big.length; i++) big[i] = i % 256;
    v2.send(input);
    v1.send(big);
    await until(() => a.messages.length >= 2, [(l) => a.onChange(l)], 'viewer messages at the app');
    expect(a.messages).toContainEqual(input);
    expect(a.messages).toContainEqual(big);

    // App → viewers, after start-up.
    const response = Buffer.concat([Buffer.from([1]), Buffer.from('pong', 'utf16le')]);
    a.send(response);
    await until(() => v1.messages.length >= 4 && v2.messages.length >= 4, [(l) => v1.onChange(l), (l) => v2.onChange(l)], 'response at both viewers');
    expect(v1.messages[3]).toEqual(response);
    expect(v2.messages[3]).toEqual(response);
    expect(v1.messages).toHaveLength(4);
    expect(relay.stats().dataChannelMessagesToApp).toBe(2);
    expect(relay.stats().dataChannelMessagesToViewers).toBe(8);
  });

  it("passes a UE 5.8 Protocol message with a 'raw' field type through byte for byte, live and replayed, and raw messages both ways", async () => {
    // 5.8 adds 'raw' (bytes to the end of the message) to the structure vocabulary of message 255.
    const toStreamer = utf16Message(255, JSON.stringify({ Direction: 0, IFrameRequest: { id: 0, structure: [] }, GameBlob: { id: 137, structure: ['uint8', 'raw'] } }));
    const fromStreamer = utf16Message(255, JSON.stringify({ Direction: 1, InitialSettings: { id: 7, structure: [] }, GameBlobReply: { id: 138, structure: ['raw'] } }));
    const startup = [toStreamer, fromStreamer, INITIAL_SETTINGS];
    const { relay } = setup();
    const a = app({ startupMessages: startup });
    await connectApp(relay, a);
    const live = await connectedViewer(relay, 'live');
    await until(() => live.messages.length >= 3, [(l) => live.onChange(l)], 'start-up messages at the live viewer');
    const late = await connectedViewer(relay, 'late');
    await until(() => late.messages.length >= 3, [(l) => late.onChange(l)], 'replayed start-up messages');
    expect(live.messages).toEqual(startup);
    expect(late.messages).toEqual(startup);

    // Raw payloads: every byte value, an odd length and lone UTF-16 surrogate halves, which a text decode would change.
    const blob = Buffer.concat([Buffer.from([137, 5]), Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from([0x00, 0xd8, 0xff])]);
    late.send(blob);
    await until(() => a.messages.length >= 1, [(l) => a.onChange(l)], 'raw message at the app');
    expect(a.messages).toEqual([blob]);
    const reply = Buffer.from([138, 0xff, 0xfe, 0x00, 0xdc, 0x01]);
    a.send(reply);
    await until(() => live.messages.length >= 4 && late.messages.length >= 4, [(l) => live.onChange(l), (l) => late.onChange(l)], 'raw reply at both viewers');
    expect(live.messages[3]).toEqual(reply);
    expect(late.messages[3]).toEqual(reply);
  });

  it('queues viewer messages until the app’s channel exists, then delivers them in order', async () => {
    const { relay } = setup();
    const v = viewer();
    await connectViewer(relay, 'early', v);
    await until(() => v.channel?.readyState === 'open', [(l) => v.onChange(l)], 'viewer channel open');
    const sent = [Buffer.from([50, 1]), Buffer.from([50, 2]), Buffer.from([50, 3])];
    for (const m of sent) v.send(m);
    const a = app();
    await connectApp(relay, a);
    await until(() => a.messages.length >= 3, [(l) => a.onChange(l)], 'queued messages at the app');
    expect(a.messages).toEqual(sent);
    // The viewer, present before the app's channel opened, gets the start-up messages live.
    await until(() => v.messages.length >= 3, [(l) => v.onChange(l)], 'start-up messages');
    expect(v.messages).toEqual(STARTUP_MESSAGES);
  });

  it('keeps serving the other viewer when one leaves (removeViewer and disconnect)', async () => {
    const { relay } = setup();
    const a = app();
    await connectApp(relay, a);
    const stay = await connectedViewer(relay, 'stay');
    const leave = await connectedViewer(relay, 'leave');
    const drop = await connectedViewer(relay, 'drop');
    const events: [string, string][] = [];
    relay.on('viewerDisconnected', (id, reason) => events.push([id, reason]));

    relay.removeViewer('leave');
    relay.removeViewer('leave');
    drop.channel?.close();
    await until(() => events.length === 1, [relayEvents(relay)], 'viewerDisconnected for drop');
    expect(events).toEqual([['drop', 'data channel closed']]);
    expect(relay.stats().viewers).toBe(1);
    await expect(relay.addViewerCandidate('leave', { candidate: 'candidate:1 1 udp 1 127.0.0.1 9 typ host' })).rejects.toMatchObject({ code: 'UNKNOWN_VIEWER' });

    const base = stay.video.length;
    const frame = a.writeFrame();
    a.send(Buffer.from([1, 0x41, 0]));
    await until(() => stay.video.length >= base + frame.length && stay.messages.length >= 4, [(l) => stay.onChange(l)], 'media and data at the remaining viewer');
    expect(leave.video.length).toBe(0);
  });

  it('reads a viewer\'s answer and candidates again without harm (a page resending them to a restarted control plane); a different answer is refused', async () => {
    const { relay } = setup();
    const a = app();
    await connectApp(relay, a);
    const v = viewer();
    const connected = new Promise<void>((resolve) => relay.on('viewerConnected', () => resolve()));
    const offer = await relay.addViewer('again');
    const answer = await v.answer(offer);
    const candidates = answer.split('\r\n').filter((line) => line.startsWith('a=candidate:')).map((line) => ({ candidate: line.slice(2), sdpMid: '0', sdpMLineIndex: 0 }));
    expect(candidates.length).toBeGreaterThan(0);
    // The first answer is still being applied when its copy arrives.
    await Promise.all([relay.acceptViewerAnswer('again', answer), relay.acceptViewerAnswer('again', answer)]);
    for (const candidate of [...candidates, ...candidates]) await relay.addViewerCandidate('again', candidate);
    await connected;
    await relay.acceptViewerAnswer('again', answer);
    for (const candidate of candidates) await relay.addViewerCandidate('again', candidate);
    await expect(relay.acceptViewerAnswer('again', answer.replace(/a=ice-ufrag:\S+/, 'a=ice-ufrag:other'))).rejects.toMatchObject({ code: 'NEGOTIATION_FAILED' });

    const frame = a.writeFrame();
    await until(() => v.video.length >= frame.length, [(l) => v.onChange(l)], 'media at the viewer whose answer came twice');
    expect(relay.stats().viewers).toBe(1);
  });

  it("passes at most MAX_REMOTE_CANDIDATES of a viewer's candidates to werift, dropping the rest with one warning", async () => {
    const lines: string[] = [];
    const { relay } = setup({ log: pino({ level: 'warn' }, { write: (line: string) => void lines.push(line) }) });
    const added = vi.spyOn(RTCPeerConnection.prototype, 'addIceCandidate');
    cleanups.push(() => added.mockRestore());
    await relay.addViewer('flood'); // no answer yet: werift would queue every candidate
    for (let i = 0; i < MAX_REMOTE_CANDIDATES + 100; i++) {
      await relay.addViewerCandidate('flood', { candidate: `candidate:${i} 1 udp 2122260223 127.0.0.1 ${40_000 + i} typ host`, sdpMid: '0', sdpMLineIndex: 0 });
    }
    expect(MAX_REMOTE_CANDIDATES).toBe(64);
    expect(added).toHaveBeenCalledTimes(MAX_REMOTE_CANDIDATES);
    const warnings = lines.map((line) => JSON.parse(line) as { msg: string; playerId?: string; limit?: number }).filter((l) => l.msg.includes('too many ICE candidates'));
    expect(warnings).toEqual([expect.objectContaining({ playerId: 'flood', limit: 64 })]);
  });

  it('replaces the ingest on a new offer; viewers keep one continuous stream', async () => {
    const { relay } = setup();
    const first = app();
    await connectApp(relay, first);
    const v = await connectedViewer(relay, 'v');
    first.writeFrame();
    await until(() => v.video.length > 0, [(l) => v.onChange(l)], 'video from the first app');
    const firstCount = v.video.length;

    const second = app();
    const failures: string[] = [];
    relay.on('ingestFailed', (r) => failures.push(r));
    await connectApp(relay, second);
    await until(() => relay.stats().rembBps > 0 || second.rtcp.remb.length > 0, [(l) => second.onChange(l)], 'second ingest up');
    const frame = second.writeFrame();
    await until(() => v.video.length >= firstCount + frame.length, [(l) => v.onChange(l)], 'video from the second app');
    const seqs = v.video.map((p) => p.sequenceNumber);
    expect(seqs.every((s, i) => i === 0 || s === ((seqs[i - 1] ?? 0) + 1) % 65_536)).toBe(true);
    expect(new Set(v.video.map((p) => p.ssrc)).size).toBe(1);
    expect(failures).toEqual([]);
  });

  it('announces publicIp next to private host candidates in viewer offers', async () => {
    const { relay } = setup({ publicIp: '203.0.113.7' });
    const offer = await relay.addViewer('v');
    const hosts = offer.split('\r\n').filter((l) => l.startsWith('a=candidate:'));
    const privateHosts = hosts.filter((l) => !/ 127\.0\.0\.1 | 203\.0\.113\.7 /.test(l));
    const publics = hosts.filter((l) => l.includes(' 203.0.113.7 '));
    expect(publics.length).toBe(privateHosts.length);
    for (const p of privateHosts) expect(publics.map((l) => l.split(' ')[5])).toContain(p.split(' ')[5]);
  });

  it('close() is idempotent, releases every socket and timer, and refuses later calls', async () => {
    const udp = (): number => process.getActiveResourcesInfo().filter((r) => r === 'UDPWrap').length;
    // dgram sockets leave the handle list on their close callback, after werift's close() has
    // resolved: there is no event to wait on, so these waits poll (bounded).
    const settle = (expected: number): Promise<void> => vi.waitFor(() => expect(udp()).toBe(expected), { timeout: 5_000, interval: 20 });
    await settle(0); // earlier tests' peers are gone
    // The default REMB period: the start phase's faster interval and the timer that ends it are live.
    const { relay, clock } = setup({ keyframeMinIntervalMs: 10_000 });
    const a = app();
    const answer = await connectApp(relay, a);
    a.writeFrame();
    const v = await connectedViewer(relay, 'v');
    v.sendPli();
    v.sendPli();
    await until(() => a.rtcp.remb.length >= 2, [(l) => a.onChange(l)], 'REMB running');
    // One interval, or two once the start phase (2 s) is over; either way a REMB timer is live.
    expect([1, 2]).toContain(clock.intervalsStarted);
    expect(clock.active).toBeGreaterThanOrEqual(1);

    // Every peer binds one UDP socket per gathered address; close the test's own peers first, so
    // what is left is the relay's two (ingest and viewer).
    const addresses = new Set(videoSection(answer).filter((l) => l.startsWith('a=candidate:')).map((l) => l.split(' ')[4])).size;
    await a.close();
    await v.close();
    await settle(2 * addresses);

    relay.close();
    relay.close();
    expect(clock.active).toBe(0);
    await relay.whenClosed();
    await settle(0);
    expect(relay.stats().viewers).toBe(0);
    await expect(relay.addViewer('x')).rejects.toMatchObject({ code: 'RELAY_CLOSED' });
    await expect(relay.acceptStreamerOffer('v=0')).rejects.toMatchObject({ code: 'RELAY_CLOSED' });
  });

  it('rejects invalid options', () => {
    expect(() => createRelay({ bitrate: { startBps: 1, minBps: 2, maxBps: 3 } })).toThrow(RelayError);
    expect(() => createRelay({ portRange: { min: 5000, max: 5000 } })).toThrow(/portRange/);
    expect(() => createRelay({ publicIp: 'example.com' })).toThrow(/IPv4/);
  });
});

/** What Chromium 156 offers when H.264 42e01f with packetization-mode=1 is unavailable (trimmed). */
const LIBWEBRTC_OFFER_WITHOUT_42E01F = [
  'v=0',
  'o=- 4611731400430051336 2 IN IP4 127.0.0.1',
  's=-',
  't=0 0',
  'a=group:BUNDLE 0 1',
  'a=extmap-allow-mixed',
  'a=msid-semantic: WMS stream',
  'm=video 9 UDP/TLS/RTP/SAVPF 96 97 102 103 104 105 39 40',
  'c=IN IP4 0.0.0.0',
  'a=rtcp:9 IN IP4 0.0.0.0',
  'a=ice-ufrag:ab12',
  'a=ice-pwd:0123456789abcdef01234567',
  'a=ice-options:trickle',
  'a=fingerprint:sha-256 79:1C:FB:D4:7F:49:C5:EC:D3:7F:DB:19:A8:25:67:A4:5A:B7:D9:0E:CF:4A:4F:E9:98:25:AB:49:95:B5:CF:4A',
  'a=setup:actpass',
  'a=mid:0',
  'a=extmap:3 http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01',
  'a=sendonly',
  'a=msid:stream track',
  'a=rtcp-mux',
  'a=rtcp-rsize',
  'a=rtpmap:96 VP8/90000',
  'a=rtcp-fb:96 goog-remb',
  'a=rtcp-fb:96 transport-cc',
  'a=rtcp-fb:96 ccm fir',
  'a=rtcp-fb:96 nack',
  'a=rtcp-fb:96 nack pli',
  'a=rtpmap:97 rtx/90000',
  'a=fmtp:97 apt=96',
  'a=rtpmap:102 H264/90000',
  'a=rtcp-fb:102 goog-remb',
  'a=rtcp-fb:102 transport-cc',
  'a=rtcp-fb:102 nack pli',
  'a=fmtp:102 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f',
  'a=rtpmap:103 rtx/90000',
  'a=fmtp:103 apt=102',
  'a=rtpmap:104 H264/90000',
  'a=rtcp-fb:104 nack pli',
  'a=fmtp:104 level-asymmetry-allowed=1;packetization-mode=0;profile-level-id=42e01f',
  'a=rtpmap:105 rtx/90000',
  'a=fmtp:105 apt=104',
  'a=rtpmap:39 H264/90000',
  'a=fmtp:39 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=4d001f',
  'a=rtpmap:40 rtx/90000',
  'a=fmtp:40 apt=39',
  'a=ssrc-group:FID 1111 2222',
  'a=ssrc:1111 cname:abc',
  'a=ssrc:2222 cname:abc',
  'm=application 9 UDP/DTLS/SCTP webrtc-datachannel',
  'c=IN IP4 0.0.0.0',
  'a=ice-ufrag:ab12',
  'a=ice-pwd:0123456789abcdef01234567',
  'a=fingerprint:sha-256 79:1C:FB:D4:7F:49:C5:EC:D3:7F:DB:19:A8:25:67:A4:5A:B7:D9:0E:CF:4A:4F:E9:98:25:AB:49:95:B5:CF:4A',
  'a=setup:actpass',
  'a=mid:1',
  'a=sctp-port:5000',
  'a=max-message-size:262144',
  '',
].join('\r\n');
