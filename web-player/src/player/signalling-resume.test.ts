// SignallingResume on the real WebSocketTransport of Epic's library, with scripted sockets and a
// manual clock: what the library hears (and does not) when a socket drops, resumes, is refused,
// cannot reach the server, or goes silent.
import { KeepaliveMonitor, LogLevel, Logger, SignallingProtocol, WebSocketTransport } from '@epicgames-ps/lib-pixelstreamingfrontend-ue5.7';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ManualClock, systemClock } from '@pixelfleet/common/clock';
import {
  PAGE_PING_INTERVAL_MS,
  RESUME_ATTEMPT_TIMEOUT_MS,
  RESUMING_CLOSE_CODE,
  SILENCE_LIMIT_MS,
  SignallingResume,
  isLibraryTransport,
} from './signalling-resume';

const URL = 'ws://host/share/proj/signalling';
const SESSION = 'session_1_2';
const TOKEN = 'pfv_token';

/** A scripted browser WebSocket: the test opens it, feeds it messages, and closes it as the network would. */
class FakeSocket {
  static readonly CONNECTING = 0;
  static readonly OPEN = 1;
  static readonly CLOSING = 2;
  static readonly CLOSED = 3;
  static opened: FakeSocket[] = [];
  readyState = FakeSocket.CONNECTING;
  readonly sent: string[] = [];
  closedWith: { code: number | undefined; reason: string | undefined } | undefined;
  onopen: ((event: Event) => void) | null = null;
  onmessage: ((event: MessageEvent) => void) | null = null;
  onclose: ((event: CloseEvent) => void) | null = null;
  onerror: ((event: Event) => void) | null = null;

  constructor(readonly url: string) {
    FakeSocket.opened.push(this);
  }

  /** The far end, when a test plays one: sees every message this socket sends. */
  static server: ((socket: FakeSocket, data: string) => void) | undefined;

  send(data: string): void {
    if (this.readyState !== FakeSocket.OPEN) return;
    this.sent.push(data);
    FakeSocket.server?.(this, data);
  }

  close(code?: number, reason?: string): void {
    this.closedWith = { code, reason };
    this.readyState = FakeSocket.CLOSED;
  }

  open(): void {
    this.readyState = FakeSocket.OPEN;
    this.onopen?.({} as Event);
  }

  receive(message: object): void {
    this.onmessage?.({ data: JSON.stringify(message) } as MessageEvent);
  }

  /** The connection ends: 1006 without a close frame, or the server's code and reason. */
  end(code: number, reason = ''): void {
    this.readyState = FakeSocket.CLOSED;
    this.onclose?.({ code, reason, wasClean: code !== 1006 } as CloseEvent);
  }
}

beforeEach(() => {
  Logger.InitLogging(LogLevel.Warning, false); // as the page does: the library logs each open at Info with a stack
  FakeSocket.opened = [];
  FakeSocket.server = undefined;
  vi.stubGlobal('WebSocket', FakeSocket);
});
afterEach(() => {
  vi.unstubAllGlobals();
  vi.useRealTimers();
});

function setup(options: { resumable?: boolean; windowSeconds?: number; needsStreamerList?: () => boolean; negotiating?: () => boolean } = {}) {
  const transport = new WebSocketTransport();
  const closes: { code: number; reason: string }[] = [];
  const messages: string[] = [];
  transport.addListener('close', (event: CloseEvent) => closes.push({ code: event.code, reason: event.reason }));
  transport.onMessage = (msg) => messages.push(msg);
  transport.connect(URL);
  const first = FakeSocket.opened[0]!;
  first.open();
  const timers = new ManualClock(0);
  const events: string[] = [];
  const openedAt: number[] = [];
  let up = options.resumable ?? true;
  if (!isLibraryTransport(transport)) throw new Error('the library transport changed shape');
  const resume = new SignallingResume(transport, {
    url: URL,
    openSocket: (url) => {
      openedAt.push(timers.now());
      return new FakeSocket(url);
    },
    clock: timers,
    resumable: () => up,
    ...(options.needsStreamerList ? { needsStreamerList: options.needsStreamerList } : {}),
    ...(options.negotiating ? { negotiating: options.negotiating } : {}),
    onResuming: () => events.push('resuming'),
    onResumed: () => events.push('resumed'),
    onGaveUp: (code, reason) => events.push(`gave up ${code} ${reason}`),
  });
  resume.enable(SESSION, TOKEN, options.windowSeconds ?? 30);
  return { transport, resume, first, timers, closes, messages, events, openedAt, setUp: (v: boolean) => (up = v) };
}

describe('SignallingResume', () => {
  it('bridges a drop: the library hears no close, keeps what it sent meanwhile, and reads the new socket', () => {
    const { transport, resume, first, closes, messages, events } = setup();
    first.end(1006);
    expect(closes).toEqual([]);
    expect(resume.resuming).toBe(true);
    expect(events).toEqual(['resuming']);

    const second = FakeSocket.opened[1]!;
    expect(second.url).toBe(`${URL}?resume=${SESSION}`);
    transport.sendMessage(JSON.stringify({ type: 'pong', time: 1 })); // the library answers a ping while away
    second.open();
    expect(second.sent.map((m) => JSON.parse(m) as unknown)).toEqual([{ type: 'pixelfleetResume', viewerToken: TOKEN, received: 0 }]);
    second.receive({ type: 'pixelfleetResumed' });

    expect(resume.resuming).toBe(false);
    expect(events).toEqual(['resuming', 'resumed']);
    // What the library sent meanwhile, then a ping whose pong clears the library keepalive's wait.
    expect(second.sent.slice(1, 2)).toEqual([JSON.stringify({ type: 'pong', time: 1 })]);
    expect(JSON.parse(second.sent[2]!)).toMatchObject({ type: 'ping' });
    expect(messages).toEqual([]); // pixelfleetResumed is ours, not the library's
    second.receive({ type: 'iceCandidate', candidate: { candidate: '', sdpMid: '0', sdpMLineIndex: 0 } });
    expect(messages.map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['iceCandidate']);
    transport.sendMessage('{"type":"ping","time":2}');
    expect(second.sent.at(-1)).toBe('{"type":"ping","time":2}');

    // A second drop later is bridged the same way.
    second.end(1006);
    expect(closes).toEqual([]);
    expect(FakeSocket.opened).toHaveLength(3);
  });

  it('a page that never got its streamer list asks for it again on the resumed socket (once), and not after it has it', () => {
    let listed = false;
    const { transport, first } = setup({ needsStreamerList: () => !listed });
    first.end(1012, 'service restarting');
    const second = FakeSocket.opened[1]!;
    transport.sendMessage(JSON.stringify({ type: 'pong', time: 1 }));
    second.open();
    second.receive({ type: 'pixelfleetResumed' });
    expect(second.sent.map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['pixelfleetResume', 'pong', 'listStreamers', 'ping']);

    // The library asked itself while away: not twice.
    second.end(1006);
    const third = FakeSocket.opened[2]!;
    transport.sendMessage(JSON.stringify({ type: 'listStreamers' }));
    third.open();
    third.receive({ type: 'pixelfleetResumed' });
    expect(third.sent.map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['pixelfleetResume', 'listStreamers', 'ping']);

    // Listed: a later resume asks for nothing but its ping.
    listed = true;
    third.end(1006);
    const fourth = FakeSocket.opened[3]!;
    fourth.open();
    fourth.receive({ type: 'pixelfleetResumed' });
    expect(fourth.sent.map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['pixelfleetResume', 'ping']);
  });

  it('with a server that keeps count: sends again, in order and as first written, what the server never read, then what it held; the server replays the rest', () => {
    const { transport, first, messages } = setup({ needsStreamerList: () => true });
    first.receive({ type: 'config', peerConnectionOptions: {} });
    first.receive({ type: 'offer', sdp: 'v=0' });
    const candidate = (n: number) => JSON.stringify({ type: 'iceCandidate', candidate: { candidate: `candidate:${n}`, sdpMid: '0', sdpMLineIndex: 0 } });
    transport.sendMessage(JSON.stringify({ type: 'listStreamers' }));
    transport.sendMessage(JSON.stringify({ type: 'answer', sdp: 'v=0' }));
    transport.sendMessage(candidate(1)); // written into a socket that is already dying
    first.end(1006);
    const second = FakeSocket.opened[1]!;
    transport.sendMessage(candidate(2)); // held while away
    second.open();
    expect(JSON.parse(second.sent[0]!)).toEqual({ type: 'pixelfleetResume', viewerToken: TOKEN, received: 2 });
    second.receive({ type: 'pixelfleetResumed', received: 1 }); // it read listStreamers only
    expect(second.sent.slice(1, 4)).toEqual([first.sent[1], candidate(1), candidate(2)]);
    // No listStreamers again: the server read it and answers it on this socket.
    expect(second.sent.slice(4).map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['ping']);

    // What the server sends again reaches the library and counts, as every frame it reads does.
    second.receive({ type: 'iceCandidate', candidate: { candidate: 'candidate:9', sdpMid: '0', sdpMLineIndex: 0 } });
    expect(messages).toHaveLength(3);
    second.end(1006);
    const third = FakeSocket.opened[2]!;
    third.open();
    expect(JSON.parse(third.sent[0]!)).toMatchObject({ received: 3 });
    third.receive({ type: 'pixelfleetResumed', received: 5 }); // listStreamers, answer, two candidates, the ping
    expect(third.sent.slice(1).map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['ping']);
  });

  it('with a server that kept no count (a restart): sends again its answer and candidates since the last offer while the peer is being set up, once per resume, and nothing else', () => {
    let negotiating = true;
    const { transport, first } = setup({ negotiating: () => negotiating });
    const candidate = (n: number) => JSON.stringify({ type: 'iceCandidate', candidate: { candidate: `candidate:${n}`, sdpMid: '0', sdpMLineIndex: 0 } });
    const answer = JSON.stringify({ type: 'answer', sdp: 'v=0 second' });
    first.receive({ type: 'offer', sdp: 'v=0 first' });
    transport.sendMessage(JSON.stringify({ type: 'answer', sdp: 'v=0 first' })); // an earlier negotiation's
    first.receive({ type: 'offer', sdp: 'v=0 second' });
    transport.sendMessage(answer); // written into a socket that is already dying
    transport.sendMessage(JSON.stringify({ type: 'stats', data: {} }));
    transport.sendMessage(candidate(1));
    first.end(1006);
    const second = FakeSocket.opened[1]!;
    transport.sendMessage(candidate(2)); // held while away
    second.open();
    second.receive({ type: 'pixelfleetResumed' });
    expect(second.sent.slice(1)).toEqual([answer, candidate(1), candidate(2), expect.stringContaining('"ping"')]);

    // Restarted again: the same negotiation, counted afresh from the first resume.
    second.end(1006);
    const third = FakeSocket.opened[2]!;
    third.open();
    expect(JSON.parse(third.sent[0]!)).toMatchObject({ received: 0 });
    third.receive({ type: 'pixelfleetResumed' });
    expect(third.sent.slice(1)).toEqual([answer, candidate(1), candidate(2), expect.stringContaining('"ping"')]);

    // Once the stream is up, a restart owes the relay nothing.
    negotiating = false;
    third.end(1006);
    const fourth = FakeSocket.opened[3]!;
    fourth.open();
    fourth.receive({ type: 'pixelfleetResumed' });
    expect(fourth.sent.slice(1).map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['ping']);
  });

  it('a page that read no offer yet sends nothing again to a server that kept no count', () => {
    const { transport, first } = setup();
    transport.sendMessage(JSON.stringify({ type: 'listStreamers' }));
    transport.sendMessage(JSON.stringify({ type: 'subscribe', streamerId: 'app' }));
    first.end(1006);
    const second = FakeSocket.opened[1]!;
    second.open();
    second.receive({ type: 'pixelfleetResumed' });
    expect(second.sent.slice(1).map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['ping']);
  });

  it('a count the page cannot have given (more than it sent) is no count: both start afresh and the page asks again for its list', () => {
    const { transport, first } = setup({ needsStreamerList: () => true });
    first.receive({ type: 'config', peerConnectionOptions: {} });
    transport.sendMessage(JSON.stringify({ type: 'listStreamers' }));
    first.end(1006);
    const second = FakeSocket.opened[1]!;
    second.open();
    second.receive({ type: 'pixelfleetResumed', received: 2 });
    expect(second.sent.slice(1).map((m) => (JSON.parse(m) as { type: string }).type)).toEqual(['listStreamers', 'ping']);
    // Counted from the resume on: nothing read yet on the new count.
    second.end(1006);
    const third = FakeSocket.opened[2]!;
    third.open();
    expect(JSON.parse(third.sent[0]!)).toMatchObject({ received: 0 });
  });

  it('resumes after a restarting control plane closes with 1012, whatever the page is doing', () => {
    const { first, closes, events } = setup({ resumable: false });
    first.end(1012, 'service restarting');
    expect(closes).toEqual([]);
    expect(events).toEqual(['resuming']);
    const second = FakeSocket.opened[1]!;
    expect(second.url).toBe(`${URL}?resume=${SESSION}`);
    second.end(1006); // the next run is not up yet: tried again
    expect(closes).toEqual([]);

    FakeSocket.opened = [];
    const off = setup({ windowSeconds: 0 });
    off.first.end(1012, 'service restarting');
    expect(off.closes).toEqual([{ code: 1012, reason: 'service restarting' }]);
  });

  it('lets a close through at once when the stream is not up, or the close was on purpose', () => {
    const notUp = setup({ resumable: false });
    notUp.first.end(1006);
    expect(notUp.closes).toEqual([{ code: 1006, reason: '' }]);

    FakeSocket.opened = [];
    const ended = setup();
    ended.first.end(4006, 'app closed or crashed');
    expect(ended.closes).toEqual([{ code: 4006, reason: 'app closed or crashed' }]);
    expect(FakeSocket.opened).toHaveLength(1);

    FakeSocket.opened = [];
    const off = setup({ windowSeconds: 0 });
    off.first.end(1006);
    expect(off.closes).toEqual([{ code: 1006, reason: '' }]);
  });

  it("hands the library the server's refusal with its code and reason", () => {
    const { first, closes, events } = setup();
    first.end(1006);
    const second = FakeSocket.opened[1]!;
    second.open();
    second.end(4008, 'session cannot be resumed');
    expect(closes).toEqual([{ code: 4008, reason: 'session cannot be resumed' }]);
    expect(events).toEqual(['resuming', 'gave up 4008 session cannot be resumed']);
  });

  it('retries an unreachable server with growing waits until the window closes, then reports the drop', () => {
    const { first, timers, closes, openedAt } = setup({ windowSeconds: 5 });
    first.end(1006, '');
    while (closes.length === 0) {
      FakeSocket.opened.at(-1)!.end(1006); // the server cannot be reached yet
      if (closes.length === 0) timers.runNext();
    }
    expect(openedAt).toEqual([0, 250, 750, 1750, 3750]);
    expect(closes).toEqual([{ code: 1006, reason: '' }]);
  });

  it('gives up an attempt that hangs, and ends the resume when the window closes even if every attempt hangs', () => {
    const { first, timers, closes, openedAt } = setup({ windowSeconds: 12 });
    first.end(1006);
    timers.advance(RESUME_ATTEMPT_TIMEOUT_MS); // never opens
    expect(FakeSocket.opened[1]!.closedWith?.code).toBe(1000);
    expect(closes).toEqual([]);
    timers.advance(12_000);
    expect(openedAt).toEqual([0, 5_250, 10_750]);
    expect(closes).toEqual([{ code: 1006, reason: '' }]);
    expect(FakeSocket.opened.at(-1)!.closedWith?.code).toBe(1000); // the last attempt is dropped too
  });

  it("with Epic's keepalive: a silent drop is bridged once, and the resumed socket then stays up", () => {
    vi.useFakeTimers();
    let networkUp = true;
    // The server: answers pings and resumes while the network carries its answers.
    FakeSocket.server = (socket, data) => {
      if (!networkUp) return;
      const message = JSON.parse(data) as { type: string; time?: number };
      if (message.type === 'ping') socket.receive({ type: 'pong', time: message.time });
      if (message.type === 'pixelfleetResume') socket.receive({ type: 'pixelfleetResumed' });
    };
    const transport = new WebSocketTransport();
    const protocol = new SignallingProtocol(transport);
    transport.connect(URL);
    FakeSocket.opened[0]!.open();
    const keepalive = new KeepaliveMonitor(protocol, PAGE_PING_INTERVAL_MS);
    keepalive.onTimeout = () => protocol.disconnect(); // as WebRtcPlayerController wires it
    const closes: number[] = [];
    transport.addListener('close', (event: CloseEvent) => closes.push(event.code));
    if (!isLibraryTransport(transport)) throw new Error('the library transport changed shape');
    const resume = new SignallingResume(transport, {
      url: URL,
      openSocket: (url) => {
        const socket = new FakeSocket(url);
        setTimeout(() => networkUp && socket.open(), 1); // while the network is down it hangs connecting
        return socket;
      },
      clock: systemClock, // on vitest's fake timers, like Epic's keepalive
      resumable: () => true,
    });
    resume.enable(SESSION, TOKEN, 30);

    vi.advanceTimersByTime(100_000);
    expect(FakeSocket.opened).toHaveLength(1); // healthy: pongs keep it quiet
    networkUp = false;
    vi.advanceTimersByTime(45_000); // the silence is noticed; attempts hang
    expect(resume.resuming).toBe(true);
    networkUp = true;
    vi.advanceTimersByTime(10_000);
    expect(resume.resuming).toBe(false);
    const sockets = FakeSocket.opened.length;
    vi.advanceTimersByTime(300_000);
    expect(FakeSocket.opened).toHaveLength(sockets); // no drop loop afterwards
    expect(closes).toEqual([]);
  });

  it('a disconnect while resuming ends it: the library hears its own close and the attempt is dropped', () => {
    const { transport, first, closes } = setup();
    first.end(1006);
    const second = FakeSocket.opened[1]!;
    transport.disconnect(1000, 'media failed');
    expect(closes).toEqual([{ code: 1000, reason: 'media failed' }]);
    expect(second.closedWith?.code).toBe(1000);
    second.open();
    second.receive({ type: 'pixelfleetResumed' });
    expect(transport.webSocket).toBe(first); // never adopted
  });

  it("treats the library's keepalive giving up (a bare disconnect) as a drop, and ignores it while resuming", () => {
    const { transport, first, closes, events } = setup();
    transport.disconnect();
    expect(first.closedWith).toEqual({ code: RESUMING_CLOSE_CODE, reason: 'keepalive timeout' });
    expect(events).toEqual(['resuming']);
    transport.disconnect(); // the next missed pong, before the new socket is in
    expect(closes).toEqual([]);
    const second = FakeSocket.opened[1]!;
    second.open();
    second.receive({ type: 'pixelfleetResumed' });
    expect(transport.webSocket).toBe(second);
  });

  it('a bare disconnect when the stream is not up closes as the library meant', () => {
    const { transport, first } = setup({ resumable: false });
    transport.disconnect();
    expect(first.closedWith).toEqual({ code: undefined, reason: undefined });
    expect(FakeSocket.opened).toHaveLength(1);
  });

  it('gives up a silent socket and resumes; a talking one is left alone', () => {
    const { first, timers, closes } = setup();
    timers.advance(SILENCE_LIMIT_MS - 1);
    first.receive({ type: 'ping', time: 1 });
    timers.advance(SILENCE_LIMIT_MS - 1);
    expect(FakeSocket.opened).toHaveLength(1);
    timers.advance(1);
    expect(first.closedWith).toEqual({ code: RESUMING_CLOSE_CODE, reason: 'no message from the server' });
    expect(FakeSocket.opened).toHaveLength(2);
    expect(closes).toEqual([]);
    // The dead socket's own close, whenever the browser reports it, is not a second drop.
    first.end(1006);
    expect(FakeSocket.opened).toHaveLength(2);
  });
});
