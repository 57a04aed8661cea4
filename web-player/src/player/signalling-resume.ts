// Keeps the page's stream alive through a short signalling drop (architecture §2). Epic's frontend
// tears its peer connection down whenever its signalling socket closes, although the media never
// went through that socket. While a stream is up (or the page waits in line), this module hides an
// abnormal close (1006: no close frame) from the library, opens a new socket with
// `?resume=<sessionId>`, proves with the session's viewer token that it is the same viewer, and
// puts the new socket under the library's transport. A control plane that is restarting closes
// with 1012 (`serviceRestarting`): that is resumed too, whatever the page is doing, since the
// next run holds every session for its viewer. Only when the server refuses, or the resume window
// runs out, does the library hear a close — the server's own code and reason when it gave one.
//
// A socket that dies loses what was in flight on it: the answer the page wrote as its network went,
// the last ICE candidates from the server. Both sides count the frames they read on the session's
// sockets and keep the last ones they wrote (SignallingJournal): the page's `pixelfleetResume`
// says how many it has read, the server's `pixelfleetResumed` how many it has, and each sends again
// what the other never got, in order, before anything new. A server that answers without a count
// (a session left by a previous run, whose sockets' history is gone) starts both counts afresh.
// What the page said since the relay's last offer (its answer, its ICE candidates) is then sent
// again while the page's peer is still being set up: the answer may have gone into the socket that
// died with the previous run, and the relay waits for it; one that did arrive is read twice, which
// the relay ignores. A page that resumes before it ever got its streamer list asks for it again,
// since the request it sent on open was held by a server that is gone and Epic's library waits
// for the reply.
import type { Clock, TimerHandle } from '@pixelfleet/common/clock';
import { SignallingJournal } from '@pixelfleet/signaling/signalling-journal';
import { VIEWER_CLOSES } from '@pixelfleet/signaling/viewer-closes';

/** The WebSocket members this module uses (a real `WebSocket` in the page, a fake in tests). */
export interface SocketLike {
  readonly readyState: number;
  onopen: ((event: Event) => void) | null;
  onmessage: ((event: MessageEvent) => void) | null;
  onclose: ((event: CloseEvent) => void) | null;
  onerror: ((event: Event) => void) | null;
  send(data: string): void;
  close(code?: number, reason?: string): void;
}

/**
 * The members of the library's WebSocketTransport taken over here (the same in
 * lib-pixelstreamingcommon-ue5.5 0.3 and -ue5.7 0.1). Checked at run time by isLibraryTransport:
 * a library that changed them gets no resume rather than a broken page.
 */
export interface LibraryTransport {
  webSocket?: SocketLike;
  sendMessage(msg: string): void;
  disconnect(code?: number, reason?: string): void;
  handleOnOpen(): void;
  handleOnClose(event: CloseEvent): void;
  handleOnMessage(event: MessageEvent): void;
  handleOnError(): void;
}

export function isLibraryTransport(value: unknown): value is LibraryTransport {
  if (typeof value !== 'object' || value === null) return false;
  const t = value as Record<string, unknown>;
  return ['sendMessage', 'disconnect', 'handleOnOpen', 'handleOnClose', 'handleOnMessage', 'handleOnError'].every((k) => typeof t[k] === 'function');
}

export interface SignallingResumeOptions {
  /** The socket URL the library connected to (without a query). */
  readonly url: string;
  readonly openSocket: (url: string) => SocketLike;
  readonly clock: Clock;
  /** True while a drop leaves something to come back to: the stream is up or being set up, or the page waits in line. */
  readonly resumable: () => boolean;
  /**
   * True while the library has not received a `streamerList`: a resumed socket then sends
   * `listStreamers` again (after what the library sent meanwhile), and the library subscribes to
   * the answer as it would have on the first socket. Default: never.
   */
  readonly needsStreamerList?: () => boolean;
  /**
   * True while the page's peer is being set up (an offer read, the stream not up yet): a resume
   * without the server's count then sends the page's answer and candidates again. Default: always.
   */
  readonly negotiating?: () => boolean;
  /** Told when a drop is being bridged, and when it was (or could not be). */
  readonly onResuming?: () => void;
  readonly onResumed?: () => void;
  readonly onGaveUp?: (code: number, reason: string) => void;
}

/** The close the page sends on a socket it gave up as silent; the gateway holds the session as for a drop. */
export const RESUMING_CLOSE_CODE = VIEWER_CLOSES.resuming.code;

/** WebSocket `CLOSED`. */
const CLOSED = 3;
const ABNORMAL_CLOSURE = VIEWER_CLOSES.connectionLost.code;
const SERVICE_RESTART = VIEWER_CLOSES.serviceRestarting.code;
/** Waits between attempts; the last one repeats until the window closes. */
export const RESUME_RETRY_DELAYS_MS = [0, 250, 500, 1_000, 2_000] as const;
/**
 * The page's JSON ping interval (the library's KeepaliveDelay, set from this). The server's own
 * pings are WebSocket frames the page never sees, so the pong to this ping is the one message a
 * quiet, healthy socket is sure to carry.
 */
export const PAGE_PING_INTERVAL_MS = 30_000;
/** A socket that says nothing for this long is dead: one ping interval and 10 s for its pong. */
export const SILENCE_LIMIT_MS = PAGE_PING_INTERVAL_MS + 10_000;
/** Messages the library sends while the socket is away are kept, up to this many, and sent after the resume. */
const MAX_HELD_MESSAGES = 64;

/** The request for the streamer list (Epic's `listStreamers`), asked again on a resumed socket that never had its answer. */
const LIST_STREAMERS = 'listStreamers';

/** What the page says in a negotiation the relay started with its offer: sent again to a server that kept no count. */
const NEGOTIATION_REPLIES: readonly unknown[] = ['answer', 'iceCandidate'];

/** How long one attempt may take to be answered (open, token sent, `pixelfleetResumed` back). */
export const RESUME_ATTEMPT_TIMEOUT_MS = 5_000;

interface Resuming {
  readonly kind: 'resuming';
  readonly droppedBy: CloseEvent;
  readonly deadline: number;
  attempt: number;
  socket: SocketLike | undefined;
  /** The wait before the next attempt, or the current attempt's timeout. */
  timer: TimerHandle | undefined;
  /** Ends the resume when the window closes, whatever the attempts are doing. */
  readonly windowTimer: TimerHandle;
}

type Phase = { kind: 'idle' } | Resuming | { kind: 'finished' };

export class SignallingResume {
  private sessionId: string | undefined;
  private viewerToken: string | undefined;
  private windowMs = 0;
  private phase: Phase = { kind: 'idle' };
  private held: string[] = [];
  /** What the library's sockets carried: frames read, and the last frames written, for a replay. */
  private journal = new SignallingJournal();
  /** journal.sent when the relay's last offer was read: the page's frames from there on are that negotiation's. */
  private negotiationFrom: number | undefined;
  private silenceTimer: TimerHandle | undefined;
  private readonly libraryOnClose: (event: CloseEvent) => void;
  private readonly librarySend: (msg: string) => void;
  private readonly libraryDisconnect: (code?: number, reason?: string) => void;
  private readonly libraryOnMessage: (event: MessageEvent) => void;

  constructor(
    private readonly transport: LibraryTransport,
    private readonly options: SignallingResumeOptions,
  ) {
    this.libraryOnClose = transport.handleOnClose.bind(transport);
    this.librarySend = transport.sendMessage.bind(transport);
    this.libraryDisconnect = transport.disconnect.bind(transport);
    this.libraryOnMessage = transport.handleOnMessage.bind(transport);
    // The library's socket handlers call these through the instance, so the overrides see every event.
    transport.handleOnClose = (event) => this.onClose(event);
    transport.handleOnMessage = (event) => this.onMessage(event);
    transport.sendMessage = (msg) => this.send(msg);
    transport.disconnect = (code, reason) => this.disconnect(code, reason);
  }

  /** The session this page may resume, from `pixelfleetSession`; a window of 0 turns resuming off. */
  enable(sessionId: string, viewerToken: string, windowSeconds: number): void {
    this.sessionId = sessionId;
    this.viewerToken = viewerToken;
    this.windowMs = windowSeconds * 1000;
    this.watchSilence();
  }

  get resuming(): boolean {
    return this.phase.kind === 'resuming';
  }

  private onMessage(event: MessageEvent): void {
    this.journal.recordReceived();
    if (isOffer(event.data)) this.negotiationFrom = this.journal.sent;
    this.watchSilence();
    this.libraryOnMessage(event);
  }

  private onClose(event: CloseEvent): void {
    if (this.phase.kind !== 'idle' || !this.shouldResume(event)) {
      this.finish();
      this.libraryOnClose(event);
      return;
    }
    const clock = this.options.clock;
    this.phase = {
      kind: 'resuming',
      droppedBy: event,
      deadline: clock.now() + this.windowMs,
      attempt: 0,
      socket: undefined,
      timer: undefined,
      windowTimer: clock.setTimeout(() => this.giveUp(event.code, event.reason), this.windowMs),
    };
    this.options.onResuming?.();
    this.attempt();
  }

  private shouldResume(event: CloseEvent): boolean {
    if (event.code === SERVICE_RESTART) return this.sessionKnown();
    return event.code === ABNORMAL_CLOSURE && this.canResume();
  }

  private canResume(): boolean {
    return this.sessionKnown() && this.options.resumable();
  }

  private sessionKnown(): boolean {
    return this.sessionId !== undefined && this.windowMs > 0;
  }

  private attempt(): void {
    const phase = this.phase;
    if (phase.kind !== 'resuming') return;
    const socket = this.options.openSocket(`${this.options.url}?resume=${encodeURIComponent(this.sessionId ?? '')}`);
    phase.socket = socket;
    socket.onopen = () => socket.send(JSON.stringify({ type: 'pixelfleetResume', viewerToken: this.viewerToken, received: this.journal.received }));
    socket.onerror = () => undefined; // the close that follows decides
    socket.onmessage = (event) => {
      const answer = readResumed(event.data);
      if (answer !== undefined) this.adopt(socket, answer.received);
    };
    socket.onclose = (event) => {
      if (this.phase !== phase) return;
      // A close frame is the server's answer (refused, or the session ended meanwhile); 1006 means it could not be reached yet.
      if (event.code !== ABNORMAL_CLOSURE) return this.giveUp(event.code, event.reason);
      this.retryOrGiveUp(phase);
    };
    // A socket that hangs while connecting, or whose answer never comes, is given up and retried.
    phase.timer = this.options.clock.setTimeout(() => this.retryOrGiveUp(phase), RESUME_ATTEMPT_TIMEOUT_MS);
  }

  private retryOrGiveUp(phase: Resuming): void {
    if (this.phase !== phase) return;
    this.dropAttempt(phase);
    phase.attempt += 1;
    const delay = RESUME_RETRY_DELAYS_MS[Math.min(phase.attempt, RESUME_RETRY_DELAYS_MS.length - 1)] ?? 0;
    if (this.options.clock.now() + delay >= phase.deadline) return this.giveUp(phase.droppedBy.code, phase.droppedBy.reason);
    phase.timer = this.options.clock.setTimeout(() => this.attempt(), delay);
  }

  /** Stops the current attempt: its timer, and its socket (whose events no longer count). */
  private dropAttempt(phase: Resuming): void {
    phase.timer?.cancel();
    phase.timer = undefined;
    const socket = phase.socket;
    phase.socket = undefined;
    if (socket === undefined) return;
    socket.onopen = socket.onmessage = socket.onerror = socket.onclose = null;
    if (socket.readyState !== CLOSED) socket.close(1000, 'resume attempt abandoned');
  }

  /**
   * The new socket is the session's: from here on the library reads and writes it as its own.
   * serverReceived: how many of the page's frames the server has read, when it kept count.
   */
  private adopt(socket: SocketLike, serverReceived: number | undefined): void {
    const phase = this.phase;
    if (phase.kind !== 'resuming' || phase.socket !== socket) return;
    phase.socket = undefined; // now the library's, not an attempt to drop
    this.dropAttempt(phase);
    phase.windowTimer.cancel();
    this.phase = { kind: 'idle' };
    this.transport.webSocket = socket;
    socket.onmessage = (event) => this.transport.handleOnMessage(event);
    socket.onclose = (event) => this.transport.handleOnClose(event);
    socket.onerror = () => this.transport.handleOnError();
    const replay = serverReceived === undefined ? undefined : this.journal.since(serverReceived);
    // Frames the server never read, as first written and not counted again; without its count, both
    // count afresh, and the negotiation under way is said again (counted: the server reads them anew).
    if (replay !== undefined) for (const frame of replay.frames) this.librarySend(frame);
    else this.restartCounts();
    const held = this.held;
    this.held = [];
    for (const msg of held) this.sendCounted(msg);
    // The server held our request on the socket that died and hands it to this one; a server that
    // starts afresh (a restart) has forgotten it.
    if (replay === undefined && this.options.needsStreamerList?.() === true && !held.some((msg) => readType(msg) === LIST_STREAMERS)) this.sendCounted(JSON.stringify({ type: LIST_STREAMERS }));
    // The library's keepalive marked itself waiting at the ping that went into the dead socket, and
    // only a pong clears that: without one it would give up this healthy socket at its next tick.
    this.sendCounted(JSON.stringify({ type: 'ping', time: this.options.clock.now() }));
    this.watchSilence();
    this.options.onResumed?.();
  }

  /** Both sides count afresh from this socket on; the page's replies in a negotiation under way are sent again first. */
  private restartCounts(): void {
    const from = this.negotiationFrom;
    const replies = from === undefined || !(this.options.negotiating?.() ?? true) ? [] : (this.journal.since(from)?.frames ?? []).filter((frame) => NEGOTIATION_REPLIES.includes(readType(frame)));
    this.journal = new SignallingJournal();
    this.negotiationFrom = from === undefined ? undefined : 0;
    for (const frame of replies) this.sendCounted(frame);
  }

  private giveUp(code: number, reason: string): void {
    const phase = this.phase;
    if (phase.kind !== 'resuming') return;
    this.finish();
    this.options.onGaveUp?.(code, reason);
    this.libraryOnClose(closeEvent(code, reason));
  }

  private send(msg: string): void {
    if (this.phase.kind !== 'resuming') return this.sendCounted(msg);
    if (this.held.length < MAX_HELD_MESSAGES) this.held.push(msg);
  }

  /** Kept before it is written: a socket that is already dying takes it, and the resume sends it again. */
  private sendCounted(msg: string): void {
    this.journal.recordSent(msg);
    this.librarySend(msg);
  }

  private disconnect(code?: number, reason?: string): void {
    // The library's keepalive gives up on a socket with a bare disconnect(); its deliberate closes pass a code.
    if (code === undefined && this.phase.kind === 'resuming') return;
    if (code === undefined && this.phase.kind === 'idle' && this.canResume()) return this.abandonSilentSocket(VIEWER_CLOSES.resumingKeepalive.reason);
    if (this.phase.kind !== 'resuming') return this.libraryDisconnect(code, reason);
    // The library's socket is already closed: it would never hear a close event, so hand it one.
    this.finish();
    this.libraryOnClose(closeEvent(code ?? 1000, reason ?? ''));
  }

  private finish(): void {
    const phase = this.phase;
    if (phase.kind === 'resuming') {
      this.dropAttempt(phase);
      phase.windowTimer.cancel();
    }
    this.phase = { kind: 'finished' };
    this.held = [];
    this.silenceTimer?.cancel();
    this.silenceTimer = undefined;
  }

  /**
   * A socket whose network vanished can look open for minutes. The page pings every
   * PAGE_PING_INTERVAL_MS and the server answers, so a longer silence means the socket is dead:
   * give it up and resume (sooner than the library's keepalive, which waits for a second ping).
   */
  private watchSilence(): void {
    if (this.phase.kind !== 'idle' || this.sessionId === undefined || this.windowMs === 0) return;
    this.silenceTimer?.cancel();
    this.silenceTimer = this.options.clock.setTimeout(() => {
      this.silenceTimer = undefined;
      if (this.phase.kind === 'idle' && this.canResume()) this.abandonSilentSocket(VIEWER_CLOSES.resuming.reason);
    }, SILENCE_LIMIT_MS);
  }

  private abandonSilentSocket(reason: string): void {
    const socket = this.transport.webSocket;
    if (socket === undefined || socket.readyState === CLOSED) return;
    // Detach the dead socket first: its own close event, whenever the browser gives up on it, must not count twice.
    socket.onclose = socket.onmessage = socket.onerror = null;
    // If the link was only slow, the server reads this code as a drop to hold, not as the viewer leaving.
    socket.close(RESUMING_CLOSE_CODE, reason);
    this.onClose(closeEvent(ABNORMAL_CLOSURE, reason));
  }
}

/** The server's `pixelfleetResumed`, with its count of the page's frames when it kept one. */
function readResumed(data: unknown): { received: number | undefined } | undefined {
  if (readType(data) !== 'pixelfleetResumed') return undefined;
  const received = (JSON.parse(data as string) as { received?: unknown }).received;
  return { received: typeof received === 'number' && Number.isSafeInteger(received) && received >= 0 ? received : undefined };
}

/** Every frame the page reads passes here: only one that may be an offer is parsed. */
function isOffer(data: unknown): boolean {
  return typeof data === 'string' && data.includes('"offer"') && readType(data) === 'offer';
}

function readType(data: unknown): unknown {
  if (typeof data !== 'string') return undefined;
  try {
    const value = JSON.parse(data) as unknown;
    return typeof value === 'object' && value !== null ? (value as { type?: unknown }).type : undefined;
  } catch {
    return undefined;
  }
}

/** What the library and the page read of a close event (code and reason), for a close no socket reported. */
function closeEvent(code: number, reason: string): CloseEvent {
  // CloseEvent is not constructible everywhere this runs (Node in unit tests); the readers use code and reason only.
  return { type: 'close', code, reason, wasClean: false } as CloseEvent;
}
