// The server side facing one browser running Epic's frontend (lib-pixelstreamingfrontend-ue5.5
// 1.3.0), in the dialect of pixel-streaming.md §1.3 steps 2–7: config first, listStreamers held
// until a streamer is available, subscribe, the server's offer, the browser's answer, trickled ICE.
import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import { CLOSE_CODES, isSendableCloseCode } from './close-codes';
import { SignallingUsageError } from './errors';
import {
  createConfig,
  createIceCandidate,
  createOffer,
  createPong,
  createStreamerIdChanged,
  createStreamerList,
  createSubscribeFailed,
  isServerExtensionType,
  type IceCandidateInit,
  type PeerConnectionOptions,
  type PlayerToServerMessage,
  type ServerExtensionMessage,
} from './messages';
import { FIELD_LIMITS, isValidId } from './schemas';
import { SignallingSocket, type EndpointKeepaliveOptions, type OutgoingMessage } from './signalling-socket';
import type { SignallingJournal } from './signalling-journal';
import type { Clock, RateLimitOptions } from '@pixelfleet/common';

/**
 * Default inbound rate limit of a browser: 200 messages back to back, then 50 a second. Epic's
 * frontend sends a handful of messages on open, trickles its ICE candidates in one burst (tens at
 * most), and pings every 30 s; a flood of `ping` or `subscribe`, each answered, is stopped early.
 */
export const DEFAULT_PLAYER_RATE_LIMIT: RateLimitOptions = Object.freeze({ burst: 200, perSecond: 50 });

export interface PlayerEndpointOptions {
  /**
   * Sent in `config` at once; the browser builds its RTCPeerConnection from it, so per-session TURN
   * credentials go here (default `{}`). `'deferred'`: no `config` until sendConfig() — for a server
   * that learns the STUN/TURN servers only when the session is placed (the frontend sends
   * `listStreamers` on open whatever happens, and needs `config` only before the offer).
   */
  readonly peerConnectionOptions?: PeerConnectionOptions | 'deferred';
  /** Largest accepted frame in bytes (default 64 KiB). */
  readonly maxMessageBytes?: number;
  /** Protocol-level keepalive (default on: 15 s pings, 10 s timeout); false disables it. */
  readonly keepalive?: EndpointKeepaliveOptions | false;
  /**
   * Messages the browser may send (default DEFAULT_PLAYER_RATE_LIMIT: burst 200, 50/s); more closes
   * the socket with 1008 'too many messages'. false: no limit.
   */
  readonly rateLimit?: RateLimitOptions | false;
  /**
   * Unsent bytes the socket may hold (default 1 MiB); past that the browser is not reading, and the
   * socket is terminated, reported as `closed(1008, 'not reading: too much unsent data')`.
   */
  readonly maxBufferedBytes?: number;
  /** Time source of the rate limit and the keepalive (default real, unref'd timers). */
  readonly clock?: Clock;
  /**
   * For a socket opened to take over a session: its first message must be `pixelfleetResume`
   * (reported as `resume`). Any other first message is not handled (no `pong`, no `streamerList`):
   * `protocolError` and a close with this code and reason. Afterwards the endpoint is an ordinary one.
   */
  readonly resumeFirst?: { readonly code: number; readonly reason: string };
}

/** The browser's answer; the bitrates are the frontend's WebRTCMin/MaxBitrate × 1000 (0 = unset). */
export interface PlayerAnswer {
  readonly sdp: string;
  readonly minBitrateBps?: number;
  readonly maxBitrateBps?: number;
}

export type PlayerEndpointEvents = {
  /** The browser subscribed to the available streamer; start the peer connection and send an offer. */
  subscribe: [streamerId: string];
  /** The browser ended its subscription. */
  unsubscribe: [];
  /** A browser offer (the pre-5.5 browser-offers flow; Epic's 5.5 frontend never sends one). */
  offer: [sdp: string];
  answer: [answer: PlayerAnswer];
  iceCandidate: [candidate: IceCandidateInit];
  /**
   * The browser asks to take over a session whose signalling dropped (our `pixelfleetResume`), with
   * the number of frames it has read from the session's sockets when it keeps count.
   */
  resume: [viewerToken: string, received: number | undefined];
  /** A frame was rejected; `closed` follows. */
  protocolError: [reason: string];
  /** Exactly once, however the socket ends. */
  closed: [code: number, reason: string];
};

/** The `subscribeFailed` text for an ID that is not the available streamer. */
export const UNKNOWN_STREAMER_MESSAGE = 'No streamer with that ID is available.';

/** Every send is a no-op once closed. */
export class PlayerEndpoint extends EventEmitter<PlayerEndpointEvents> {
  private readonly connection: SignallingSocket<'player'>;
  private availableStreamerId: string | undefined;
  private subscribedTo: string | undefined;
  /** The browser asked for the list before a streamer was available; one reply is owed. */
  private listRequested = false;
  private hasSentConfig: boolean;
  /** Set until the first message of a resuming socket: the close for anything but `pixelfleetResume`. */
  private resumeFirst: { readonly code: number; readonly reason: string } | undefined;
  /** The session's count of frames across its sockets, once keepJournal() named it. */
  private journal: SignallingJournal | undefined;

  constructor(socket: WebSocket, options: PlayerEndpointOptions = {}) {
    super();
    if (options.resumeFirst !== undefined && !isSendableCloseCode(options.resumeFirst.code)) {
      throw new SignallingUsageError('invalid_argument', `close code ${options.resumeFirst.code} cannot be sent`);
    }
    this.resumeFirst = options.resumeFirst;
    this.hasSentConfig = options.peerConnectionOptions !== 'deferred';
    this.connection = new SignallingSocket(
      socket,
      'player',
      {
        message: (message) => this.onMessage(message),
        protocolError: (reason) => this.emit('protocolError', reason),
        closed: (code, reason) => this.emit('closed', code, reason),
      },
      {
        greeting: options.peerConnectionOptions === 'deferred' ? [] : [createConfig(options.peerConnectionOptions ?? {})],
        maxMessageBytes: options.maxMessageBytes,
        keepalive: options.keepalive ?? {},
        rateLimit: options.rateLimit ?? DEFAULT_PLAYER_RATE_LIMIT,
        maxBufferedBytes: options.maxBufferedBytes,
        clock: options.clock,
      },
    );
  }

  get isOpen(): boolean {
    return this.connection.isOpen;
  }

  /**
   * From now on every frame read from the browser is counted in journal and every frame written is
   * kept there (signalling-journal.ts), so that a socket resuming the session can replay what was lost.
   */
  keepJournal(journal: SignallingJournal): void {
    this.journal = journal;
  }

  /** Writes frames a dropped socket of the session never delivered, as first written; not counted again. */
  replay(frames: readonly string[]): void {
    for (const frame of frames) this.connection.sendFrame(frame);
  }

  /** True while a `listStreamers` waits for a streamer to become available. */
  get owesStreamerList(): boolean {
    return this.listRequested;
  }

  /** Takes over a `listStreamers` an earlier socket of the session held unanswered: the list goes out here. */
  oweStreamerList(): void {
    this.listRequested = true;
  }

  /** The streamer ID the browser is subscribed to, if any. */
  get subscribedStreamerId(): string | undefined {
    return this.subscribedTo;
  }

  /**
   * Makes streamerId the one streamer this browser may list and subscribe to, and answers a held
   * `listStreamers`. A new ID while subscribed tells the browser with `streamerIdChanged`.
   */
  setStreamerAvailable(streamerId: string): void {
    if (!isValidId(streamerId)) throw new SignallingUsageError('invalid_argument', `streamerId must be 1–${FIELD_LIMITS.id} characters`);
    const previous = this.availableStreamerId;
    this.availableStreamerId = streamerId;
    if (this.subscribedTo !== undefined && previous !== undefined && previous !== streamerId) {
      this.subscribedTo = streamerId;
      this.send(createStreamerIdChanged(streamerId));
    }
    if (this.listRequested) {
      this.listRequested = false;
      this.send(createStreamerList([streamerId]));
    }
  }

  /** Sends the deferred `config`. Once only: each `config` makes the frontend build a new peer connection. */
  /** True once this socket was sent its `config` (at open, or by sendConfig when deferred). */
  get configSent(): boolean {
    return this.hasSentConfig;
  }

  sendConfig(peerConnectionOptions: PeerConnectionOptions): void {
    if (this.hasSentConfig) throw new SignallingUsageError('wrong_state', 'config was already sent');
    this.hasSentConfig = true;
    this.send(createConfig(peerConnectionOptions));
  }

  /** The server's SDP offer (sent without `playerId`, as Wilbur 5.5 forwards it). */
  sendOffer(sdp: string): void {
    this.send(createOffer(sdp));
  }

  sendIceCandidate(candidate: IceCandidateInit): void {
    this.send(createIceCandidate(candidate));
  }

  /** Refuses or ends the subscription (e.g. no free slot) with a message the frontend shows. */
  sendSubscribeFailed(message: string): void {
    this.subscribedTo = undefined;
    this.send(createSubscribeFailed(message));
  }

  /** Sends one of our own messages; its `type` must start with `pixelfleet` (e.g. `pixelfleetQueue`). */
  sendCustom(message: ServerExtensionMessage): void {
    if (!isServerExtensionType(message.type)) {
      throw new SignallingUsageError('invalid_argument', 'an extension message type must start with "pixelfleet"');
    }
    this.send(message);
  }

  /** Closes the socket (default 1000) and reports `closed` at once. Idempotent. */
  close(code: number = CLOSE_CODES.normal, reason = ''): void {
    this.connection.close(code, reason);
  }

  private send(message: OutgoingMessage): void {
    // A frame the socket can no longer deliver is still kept: the page resuming will want it.
    if (!this.connection.isOpen) return;
    const frame = JSON.stringify(message);
    this.journal?.recordSent(frame);
    this.connection.sendFrame(frame);
  }

  private onMessage(message: PlayerToServerMessage): void {
    const resumeFirst = this.resumeFirst;
    if (resumeFirst !== undefined) {
      this.resumeFirst = undefined;
      if (message.type !== 'pixelfleetResume') {
        this.emit('protocolError', `${message.type} before pixelfleetResume on a resuming socket`);
        this.close(resumeFirst.code, resumeFirst.reason);
        return;
      }
    }
    // Before handling, so that the resume handshake (read before any journal is kept) is not counted.
    this.journal?.recordReceived();
    switch (message.type) {
      case 'listStreamers':
        // Held until a streamer is available: Epic's frontend waits for the reply rather than polling.
        if (this.availableStreamerId === undefined) this.listRequested = true;
        else this.send(createStreamerList([this.availableStreamerId]));
        return;
      case 'subscribe':
        if (message.streamerId !== this.availableStreamerId) {
          this.send(createSubscribeFailed(UNKNOWN_STREAMER_MESSAGE));
          return;
        }
        this.subscribedTo = message.streamerId;
        this.emit('subscribe', message.streamerId);
        return;
      case 'unsubscribe':
        if (this.subscribedTo === undefined) return;
        this.subscribedTo = undefined;
        this.emit('unsubscribe');
        return;
      case 'offer':
        this.emit('offer', message.sdp);
        return;
      case 'answer':
        this.emit('answer', {
          sdp: message.sdp,
          ...(message.minBitrateBps === undefined ? {} : { minBitrateBps: message.minBitrateBps }),
          ...(message.maxBitrateBps === undefined ? {} : { maxBitrateBps: message.maxBitrateBps }),
        });
        return;
      case 'iceCandidate':
        this.emit('iceCandidate', message.candidate);
        return;
      case 'ping':
        this.send(createPong(message.time));
        return;
      case 'pixelfleetResume':
        this.emit('resume', message.viewerToken, message.received);
        return;
      case 'pong':
      case 'dataChannelRequest':
      case 'peerDataChannelsReady':
      case 'layerPreference':
        // pong: we keep alive with protocol pings. The rest are SFU-only and we never offer with
        // `sfu: true`; dropped quietly so that a quality-menu click cannot end a stream.
        return;
      default: {
        const unreachable: never = message;
        return unreachable;
      }
    }
  }
}
