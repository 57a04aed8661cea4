// The mock Unreal app as a real child process with the real Unreal command line, against a
// Wilbur-like signalling stub and werift players: offer, H.264 RTP, data channel, input, clean
// stop, and each failure mode.
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { H264RtpPayload, type RtpPacket } from 'werift';
import { encodeToStreamer, TO_STREAMER } from './data-channel-protocol';
import { NalUnitType, splitNalUnits } from './h264-annexb';
import { DEFAULT_FIXTURE_PATH } from './fixture';
import { MOCK_UNREAL_LOG, spawnMockUnreal, unrealCommandLine, type MockUnrealProcess } from './mock-unreal-process';
import { SignallingStub } from './signalling-stub';
import { WeriftPlayer } from './werift-player';

const FIXTURE_IDR_UNITS = splitNalUnits(readFileSync(DEFAULT_FIXTURE_PATH)).filter((u) => u.type === NalUnitType.IdrSlice).map((u) => u.data);

/** NAL units reassembled from RTP (werift's depacketizer), noting which came from FU-A fragments. */
function reassemble(packets: readonly RtpPacket[]): { nal: Buffer; fromFuA: boolean; timestamp: number }[] {
  const out: { nal: Buffer; fromFuA: boolean; timestamp: number }[] = [];
  let fragment: Buffer | undefined;
  for (const packet of packets) {
    const parsed = H264RtpPayload.deSerialize(packet.payload, fragment);
    fragment = parsed.fragment;
    if (!parsed.payload) continue;
    const fromFuA = ((packet.payload[0] ?? 0) & 0x1f) === 28;
    for (const unit of splitNalUnits(parsed.payload)) out.push({ nal: unit.data, fromFuA, timestamp: packet.header.timestamp });
  }
  return out;
}

const dataIds = (player: WeriftPlayer): number[] => player.dataMessages.map((m) => m[0] ?? -1);
const text = (message: Buffer | undefined): string => message?.subarray(1).toString('utf16le') ?? '';

describe('mock Unreal app streaming to a werift player', () => {
  let workDir: string;
  let logPath: string;
  let stub: SignallingStub;
  let app: MockUnrealProcess;
  let player: WeriftPlayer;

  beforeAll(async () => {
    workDir = mkdtempSync(join(tmpdir(), 'mock-unreal-'));
    logPath = join(workDir, 'MockProject.log');
    stub = await SignallingStub.start();
    app = spawnMockUnreal(unrealCommandLine({ signallingUrl: stub.url, streamerId: 'MockStreamer', logPath }));
    await stub.waitForMessage((m) => m.type === 'endpointId');
    await app.waitForLine(MOCK_UNREAL_LOG.identified('MockStreamer'));
    player = new WeriftPlayer('Player0', stub);
    player.connect();
    await player.waitUntil(() => player.offerSdp !== undefined, 'the offer');
  });

  afterAll(async () => {
    await app.kill();
    await player.close();
    await stub.close();
    rmSync(workDir, { recursive: true, force: true });
  });

  it('identifies with the -PixelStreamingID after config and identify', () => {
    expect(stub.received[0]).toEqual({ type: 'endpointId', id: 'MockStreamer', protocolVersion: '1.3.0' });
  });

  it('offers H.264 42e01f packetization-mode 1 on PT 96, sendonly with a stream id, and a data channel', async () => {
    const sdp = player.offerSdp ?? '';
    expect(sdp).toMatch(/^m=video \d+ UDP\/TLS\/RTP\/SAVPF 96\r?$/m);
    expect(sdp).toMatch(/^a=rtpmap:96 [Hh]264\/90000\r?$/m);
    expect(sdp).toMatch(/^a=fmtp:96 .*profile-level-id=42e01f/m);
    expect(sdp).toMatch(/^a=fmtp:96 .*packetization-mode=1/m);
    for (const fb of ['nack', 'nack pli', 'goog-remb']) expect(sdp).toMatch(new RegExp(`^a=rtcp-fb:96 ${fb}\\r?$`, 'm'));
    expect(sdp).toMatch(/^a=sendonly\r?$/m);
    expect(sdp).toMatch(/^a=msid:\S+ \S+/m);
    expect(sdp).toMatch(/^m=application \d+ UDP\/DTLS\/SCTP webrtc-datachannel\r?$/m);
    expect(sdp).toMatch(/^a=group:BUNDLE 0 1\r?$/m);
    await stub.waitForMessage((m) => m.type === 'iceCandidate');
    const offerAt = stub.received.findIndex((m) => m.type === 'offer');
    const firstCandidateAt = stub.received.findIndex((m) => m.type === 'iceCandidate');
    expect(offerAt).toBeGreaterThanOrEqual(0);
    expect(firstCandidateAt).toBeGreaterThan(offerAt); // candidates trickle after the offer
    expect(stub.received[firstCandidateAt]).toMatchObject({ playerId: 'Player0', candidate: { sdpMid: '0', sdpMLineIndex: 0 } });
  });

  it('streams RTP on PT 96 from a keyframe, with rising timestamps and an IDR reassembled from FU-A', async () => {
    await player.waitUntil(() => player.rtp.filter((p) => p.header.marker).length >= 20, '20 video frames');
    const packets = [...player.rtp];
    expect(packets.every((p) => p.header.payloadType === 96)).toBe(true);
    const units = reassemble(packets);
    expect(units[0] && (units[0].nal[0] ?? 0) & 0x1f).toBe(NalUnitType.Sps); // the first picture is a keyframe
    const idr = units.find((u) => ((u.nal[0] ?? 0) & 0x1f) === NalUnitType.IdrSlice && u.fromFuA);
    expect(idr).toBeDefined();
    expect(FIXTURE_IDR_UNITS.some((fixtureIdr) => fixtureIdr.equals(idr?.nal ?? Buffer.alloc(0)))).toBe(true);
    const frameStamps = [...new Set(packets.map((p) => p.header.timestamp))];
    const steps = frameStamps.slice(1).map((t, i) => (t - (frameStamps[i] ?? 0) + 2 ** 32) % 2 ** 32);
    expect(steps.every((s) => s > 0 && s % 3000 === 0)).toBe(true); // 90 kHz, 30 fps
    const seqSteps = packets.slice(1).map((p, i) => (p.header.sequenceNumber - (packets[i]?.header.sequenceNumber ?? 0) + 0x10000) % 0x10000);
    expect(seqSteps.every((s) => s >= 1 && s < 100)).toBe(true);
  });

  it('announces the protocol (255) ToStreamer then FromStreamer, then InitialSettings (7) from the command line', async () => {
    await player.waitUntil(() => player.dataMessages.length >= 3, 'three data-channel messages');
    expect(dataIds(player).slice(0, 3)).toEqual([255, 255, 7]);
    const [toStreamer, fromStreamer, settings] = player.dataMessages.slice(0, 3).map((m) => JSON.parse(text(m)) as Record<string, unknown>);
    expect(toStreamer).toMatchObject({ Direction: 0, UIInteraction: { id: 50 }, KeyDown: { id: 60, structure: ['uint8', 'uint8'] } });
    expect(fromStreamer).toMatchObject({ Direction: 1, Response: { id: 1 }, InitialSettings: { id: 7 }, Protocol: { id: 255 } });
    expect(settings).toMatchObject({ WebRTC: { FPS: 30, StartBitrate: 2_000_000, MinBitrate: 500_000, MaxBitrate: 8_000_000 } });
  });

  it('answers RequestInitialSettings and RequestQualityControl like UE, without an announcement feedback loop', async () => {
    const before = player.dataMessages.length;
    // The stock frontend sends 7 and 1 after each 255 it receives, i.e. twice.
    for (let i = 0; i < 2; i++) {
      player.send(encodeToStreamer.empty(TO_STREAMER.RequestInitialSettings.id));
      player.send(encodeToStreamer.empty(TO_STREAMER.RequestQualityControl.id));
    }
    await player.waitUntil(
      () => dataIds(player).slice(before).filter((id) => id === 7).length >= 2 && dataIds(player).slice(before).filter((id) => id === 0).length >= 2,
      'two InitialSettings and two QualityControlOwnership replies',
    );
    const replies = player.dataMessages.slice(before);
    expect(replies.filter((m) => m[0] === 0).map((m) => [...m])).toEqual([[0, 1], [0, 1]]);
    // At most one re-announcement (only if the requests came > 1 s after the first one).
    expect(replies.filter((m) => m[0] === 255).length).toBeLessThanOrEqual(2);
  });

  it('answers UIInteraction {"a":1} with a Response carrying the same text, and logs input', async () => {
    const before = player.dataMessages.length;
    const ui = encodeToStreamer.string(TO_STREAMER.UIInteraction.id, '{"a":1}');
    expect([...ui]).toEqual([0x32, 7, 0, ...Buffer.from('{"a":1}', 'utf16le')]);
    player.send(ui);
    player.send(encodeToStreamer.keyDown(65));
    player.send(encodeToStreamer.mouseButton(72, 0, 0.5, 0.5));
    await player.waitUntil(() => player.dataMessages.slice(before).some((m) => m[0] === 1), 'a Response');
    expect(text(player.dataMessages.slice(before).find((m) => m[0] === 1))).toBe('{"a":1}');
    await app.waitForLine('LogPixelStreamingInput: UIInteraction {"a":1}');
    await app.waitForLine('LogPixelStreamingInput: KeyDown keyCode=65 repeat=0');
    await app.waitForLine('LogPixelStreamingInput: MouseDown button=0 x=0.5000 y=0.5000');
  });

  it('passes a PLI on to the video feed', async () => {
    const receiver = player.pc.getReceivers()[0];
    const ssrc = player.rtp[0]?.header.ssrc;
    if (receiver === undefined || ssrc === undefined) throw new Error('no video receiver');
    // 300 ms past the last keyframe, measured by RTP time rather than a sleep: past any request an
    // earlier test had honoured (the app ignores another within 300 ms, as libwebrtc does).
    const stampOf = (p: RtpPacket | undefined): number => p?.header.timestamp ?? 0;
    const lastKeyframeAt = stampOf(player.rtp.findLast((p) => ((p.payload[0] ?? 0) & 0x1f) === 24));
    await player.waitUntil(() => (stampOf(player.rtp.at(-1)) - lastKeyframeAt + 2 ** 32) % 2 ** 32 >= 90 * 300, '300 ms of video after a keyframe');
    await receiver.sendRtcpPLI(ssrc);
    const line = await app.waitForLine('Player0 requested a keyframe (PLI)');
    expect(line.endsWith('(PLI)')).toBe(true); // honoured, not "…; one is coming or was asked for within 300 ms, ignored"
  });

  it('serves a second player at the same time and closes only it on playerDisconnected', async () => {
    const second = new WeriftPlayer('Player1', stub);
    try {
      second.connect();
      await second.waitUntil(() => second.rtp.some((p) => p.header.marker) && second.dataMessages.length >= 3, 'video and the announcement');
      expect(((second.rtp[0]?.payload[0] ?? 0) & 0x1f)).toBe(24); // starts with the keyframe's SPS/PPS STAP-A
      stub.disconnectPlayer('Player1');
      await app.waitForLine('Closed peer connection for Player1 (playerDisconnected)');
      const count = player.rtp.length;
      await player.waitUntil(() => player.rtp.length > count + 5, 'Player0 still receiving');
    } finally {
      await second.close();
    }
  });

  it('exits with code 0 on SIGTERM, and its log ends with LogExit: Exiting. and holds the input lines', async () => {
    app.child.kill('SIGTERM');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    const log = readFileSync(logPath, 'utf8').trimEnd().split('\n');
    expect(log[0]).toMatch(/^Log file open, /);
    expect(log.at(-1)).toMatch(/^\[\d{4}\.\d{2}\.\d{2}-\d{2}\.\d{2}\.\d{2}:\d{3}\]\[ *\d+\]LogExit: Exiting\.$/);
    for (const expected of [
      'LogInit: Display: Running engine for game: MockProject',
      MOCK_UNREAL_LOG.identified('MockStreamer'),
      'LogPixelStreamingInput: KeyDown keyCode=65 repeat=0',
      'LogPixelStreamingInput: MouseDown button=0 x=0.5000 y=0.5000',
      'LogPixelStreamingInput: UIInteraction {"a":1}',
      'LogCore: Warning: *** INTERRUPTED *** : SHUTTING DOWN (SIGTERM)',
      'Closed peer connection for Player0 (SIGTERM)',
    ]) {
      expect(log.some((line) => line.includes(expected)), expected).toBe(true);
    }
  });
});

describe('mock Unreal app failure modes', () => {
  let workDir: string;
  const launched: MockUnrealProcess[] = [];
  const stubs: SignallingStub[] = [];

  /** Each test gets its own signalling stub, so connection counts are its own. */
  const launch = async (name: string, extraArgs: string[] = [], env: Record<string, string> = {}): Promise<{ app: MockUnrealProcess; logPath: string; stub: SignallingStub }> => {
    const stub = await SignallingStub.start();
    stubs.push(stub);
    const logPath = join(workDir, `${name}.log`);
    const app = spawnMockUnreal([...unrealCommandLine({ signallingUrl: stub.url, streamerId: name, logPath }), ...extraArgs], env);
    launched.push(app);
    return { app, logPath, stub };
  };

  beforeAll(() => {
    workDir = mkdtempSync(join(tmpdir(), 'mock-unreal-failures-'));
  });

  afterAll(async () => {
    await Promise.all(launched.map((app) => app.kill()));
    await Promise.all(stubs.map((stub) => stub.close()));
    rmSync(workDir, { recursive: true, force: true });
  });

  it('crash (MOCK_UNREAL_CRASH_AFTER_MS=300): exits with code 3 after at least 300 ms, without LogExit', async () => {
    const started = Date.now();
    const { app, logPath } = await launch('Crash', [], { MOCK_UNREAL_CRASH_AFTER_MS: '300' });
    expect(await app.exited).toEqual({ code: 3, signal: null });
    expect(Date.now() - started).toBeGreaterThanOrEqual(300);
    const log = readFileSync(logPath, 'utf8');
    expect(log).toContain(MOCK_UNREAL_LOG.crash);
    expect(log).not.toContain(MOCK_UNREAL_LOG.exit);
  });

  it('crash report (-MockCrashReport, started in <Project>/Binaries/Linux): the crash leaves Saved/Crashes/UECC-…/ as Unreal does; -MockSavedLog writes Saved/Logs', async () => {
    const binaries = join(workDir, 'Report', 'MockProject', 'Binaries', 'Linux');
    mkdirSync(binaries, { recursive: true });
    const stub = await SignallingStub.start();
    stubs.push(stub);
    const logPath = join(workDir, 'Report.log');
    const app = spawnMockUnreal([...unrealCommandLine({ signallingUrl: stub.url, streamerId: 'Report', logPath }), '-MockCrashReport', '-MockSavedLog=Plugin.log'], {}, binaries);
    launched.push(app);
    await app.waitForLine('Streamer identified');
    process.kill(app.child.pid!, 'SIGUSR2'); // crash now
    expect(await app.exited).toEqual({ code: 3, signal: null });
    const saved = join(workDir, 'Report', 'MockProject', 'Saved');
    expect(readFileSync(join(saved, 'Logs', 'Plugin.log'), 'utf8')).toContain(`Plugin log of MockProject, pid ${app.child.pid}`);
    const [crash, ...more] = readdirSync(join(saved, 'Crashes'));
    expect(more).toEqual([]);
    expect(crash).toMatch(/^UECC-Linux-[0-9A-F]{32}_0000$/);
    const dir = join(saved, 'Crashes', crash!);
    expect(readdirSync(dir).sort()).toEqual(['CrashContext.runtime-xml', 'MockProject.log', 'UEMinidump.dmp']);
    const context = readFileSync(join(dir, 'CrashContext.runtime-xml'), 'utf8');
    expect(context).toContain(`<ProcessId>${app.child.pid}</ProcessId>`);
    expect(context).toContain(`-ABSLOG=${logPath}`);
    expect(context).toContain('<ErrorMessage>Fatal error: simulated crash (SIGUSR2)</ErrorMessage>');
    expect(readFileSync(join(dir, 'MockProject.log'), 'utf8')).toContain('Streamer identified');
    expect(readFileSync(join(dir, 'UEMinidump.dmp')).subarray(0, 4).toString()).toBe('MDMP');
    expect(readFileSync(logPath, 'utf8')).toContain(MOCK_UNREAL_LOG.crash);
  });

  it('exit early (-MockExitEarly): exits with code 1 before connecting', async () => {
    const { app, logPath, stub } = await launch('ExitEarly', ['-MockExitEarly']);
    expect(await app.exited).toEqual({ code: 1, signal: null });
    expect(stub.connections).toBe(0);
    expect(readFileSync(logPath, 'utf8')).not.toContain(MOCK_UNREAL_LOG.exit);
  });

  it('never connect (MOCK_UNREAL_NEVER_CONNECT=1): stays up without dialling signalling, stops cleanly on SIGINT', async () => {
    const { app, stub, logPath } = await launch('NeverConnect', [], { MOCK_UNREAL_NEVER_CONNECT: '1' });
    await app.waitForLine(MOCK_UNREAL_LOG.neverConnect);
    expect(stub.connections).toBe(0);
    expect(app.isAlive()).toBe(true);
    app.child.kill('SIGINT');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    const log = readFileSync(logPath, 'utf8');
    expect(log).toContain('*** INTERRUPTED *** : SHUTTING DOWN (SIGINT)');
    expect(log.trimEnd().endsWith(MOCK_UNREAL_LOG.exit)).toBe(true);
  });

  it('signalling gate (-MockSignallingGate=<file>): launched but not dialling until the file exists, then identifies', async () => {
    const gate = join(workDir, 'gate-open');
    const { app, stub } = await launch('Gated', [`-MockSignallingGate=${gate}`]);
    await app.waitForLine(MOCK_UNREAL_LOG.gateWaiting(gate));
    expect(stub.connections).toBe(0);
    writeFileSync(gate, '');
    await app.waitForLine(MOCK_UNREAL_LOG.identified('Gated'));
    expect(stub.connections).toBe(1);
  });

  // 4 s: on two loaded cores the mock takes up to ~1.5 s to load its modules, and a start already
  // past when it is ready dials at once (nothing to wait for, no line to see).
  it('a realistic start (-MockStartupSeconds=4): idle but for a WebRTC warm-up, not dialling, until 4 s after its process started, then identifies', async () => {
    const { app, stub } = await launch('SlowStart', ['-MockStartupSeconds=4']);
    await app.waitForLine('before connecting to signalling');
    expect(stub.connections).toBe(0);
    // Its WebRTC stack made ready while it loads (webrtc-warmup.ts), as libwebrtc's needs no warming.
    await app.waitForLine('WebRTC stack warmed in');
    await app.waitForLine(MOCK_UNREAL_LOG.identified('SlowStart'));
    // The process's own clock: the dial came no earlier than the start it was given.
    const startedAt = Number(readFileSync(`/proc/${app.child.pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[19]) / 100;
    const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
    expect(uptime - startedAt).toBeGreaterThanOrEqual(4);
    expect(stub.connections).toBe(1);
  });

  it('hang on stop (-MockHangOnStop): survives SIGTERM until SIGKILL', async () => {
    const { app } = await launch('HangOnStop', ['-MockHangOnStop']);
    await app.waitForLine(MOCK_UNREAL_LOG.identified('HangOnStop'));
    app.child.kill('SIGTERM');
    await app.waitForLine(MOCK_UNREAL_LOG.ignoredSignal('SIGTERM'));
    expect(app.isAlive()).toBe(true);
    app.child.kill('SIGKILL');
    expect(await app.exited).toEqual({ code: null, signal: 'SIGKILL' });
  });

  it('kick (-MockKickOnUIInteraction): a UIInteraction {"kick": reason} is answered with disconnectPlayer; others are echoed', async () => {
    const { app, stub } = await launch('Kick', ['-MockKickOnUIInteraction']);
    await app.waitForLine(MOCK_UNREAL_LOG.identified('Kick'));
    const player = new WeriftPlayer('Player0', stub);
    try {
      player.connect();
      await player.waitUntil(() => player.channel !== undefined && player.dataMessages.length >= 3, 'the data channel and the announcement');
      player.send(encodeToStreamer.string(TO_STREAMER.UIInteraction.id, '{"a":1}'));
      await player.waitUntil(() => player.dataMessages.some((m) => m[0] === 1 && text(m) === '{"a":1}'), 'the Response');
      player.send(encodeToStreamer.string(TO_STREAMER.UIInteraction.id, '{"kick":"game over"}'));
      expect(await stub.waitForMessage((m) => m.type === 'disconnectPlayer')).toEqual({ type: 'disconnectPlayer', playerId: 'Player0', reason: 'game over' });
      await app.waitForLine('LogPixelStreaming: Kicking player Player0: game over');
      // The channel is ordered: a Response to the kick would arrive before this one's.
      player.send(encodeToStreamer.string(TO_STREAMER.UIInteraction.id, '{"b":2}'));
      await player.waitUntil(() => player.dataMessages.some((m) => m[0] === 1 && text(m) === '{"b":2}'), 'the next Response');
      expect(player.dataMessages.filter((m) => m[0] === 1).map(text)).toEqual(['{"a":1}', '{"b":2}']);
    } finally {
      await player.close();
    }
  });

  it('exits with code 0, logging why, when the signalling server drops it', async () => {
    const { app, logPath, stub } = await launch('Dropped');
    await app.waitForLine(MOCK_UNREAL_LOG.identified('Dropped'));
    stub.dropStreamer();
    expect(await app.exited).toEqual({ code: 0, signal: null });
    const log = readFileSync(logPath, 'utf8');
    expect(log).toMatch(/Signalling connection closed \(code 1006\).*exiting \(the mock does not reconnect\)/);
    expect(log.trimEnd().endsWith(MOCK_UNREAL_LOG.exit)).toBe(true);
  });

  it('outlive signalling (-MockReconnectSignalling): a dropped socket ends its players and is dialled again; -MockHelperProcess: a helper child in its group', async () => {
    const { app, stub, logPath } = await launch('Outlive', ['-MockReconnectSignalling', '-MockHelperProcess']);
    await app.waitForLine(MOCK_UNREAL_LOG.identified('Outlive'));
    const helperPid = Number((await app.waitForLine(MOCK_UNREAL_LOG.helperStarted)).split(MOCK_UNREAL_LOG.helperStarted)[1]!.split(' ')[0]);
    const pgidOf = (pid: number) => readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ')[2];
    expect(pgidOf(helperPid)).toBe(pgidOf(app.child.pid!));

    stub.dropStreamer();
    await app.waitForLine(MOCK_UNREAL_LOG.reconnecting);
    await vi.waitFor(() => expect(stub.received.filter((m) => m.type === 'endpointId')).toHaveLength(2), { timeout: 10_000 });
    expect(stub.connections).toBe(2);
    expect(app.isAlive()).toBe(true);

    app.child.kill('SIGTERM');
    expect(await app.exited).toEqual({ code: 0, signal: null });
    expect(readFileSync(logPath, 'utf8')).toContain('Signalling connection closed (code 1006); ended 0 player(s); reconnecting in 1000 ms');
    // Gone, or a zombie nobody reaps (its parent exited; some containers' PID 1 never waits).
    const gone = () => {
      try {
        return readFileSync(`/proc/${helperPid}/stat`, 'utf8').split(') ')[1]!.startsWith('Z');
      } catch {
        return true;
      }
    };
    await vi.waitFor(() => expect(gone()).toBe(true));
  });
});
