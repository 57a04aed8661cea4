// The server side facing one streamer (an Unreal app) on an accepted socket, acting as Wilbur 5.5
// (pixel-streaming.md §1.3, §9 "Agent facing UE"): config and identify on open, endpointId
// confirmed (or refused, as the owner decides), players announced by the owner, the streamer's
// offers and candidates surfaced by playerId.
import { EventEmitter } from 'node:events';
import type { WebSocket } from 'ws';
import { CLOSE_CODES } from './close-codes';
import { SignallingUsageError } from './errors';
import {
  createAnswer,
  createConfig,
  createEndpointIdConfirm,
  createIceCandidate,
  createIdentify,
  createPlayerConnected,
  createPlayerDisconnected,
  createPong,
  type IceCandidateInit,
  type PeerConnectionOptions,
  type StreamerToServerMessage,
} from './messages';
import { FIELD_LIMITS, isValidId } from './schemas';
import { SignallingSocket, type EndpointKeepaliveOptions } from './signalling-socket';
import type { Clock, RateLimitOptions } from '@pixelfleet/common';

export interface StreamerEndpointOptions {
  /** Sent in `config` (default `{}`: no ICE servers are needed on loopback). */
  readonly peerConnectionOptions?: PeerConnectionOptions;
  /** Largest accepted frame in bytes (default 64 KiB). */
  readonly maxMessageBytes?: number;
  /**
   * Protocol-level keepalive, off by default here: on loopback a dead Unreal app closes its socket,
   * and a long hitch (shader compile, level load) must not end a session. Pass `{}` for defaults.
   */
  readonly keepalive?: EndpointKeepaliveOptions | false;
  /**
   * Messages the streamer may send, off by default: the streamer is the app we launched, on
   * loopback, and a false alarm would end a paid session. More closes with 1008 'too many messages'.
   */
  readonly rateLimit?: RateLimitOptions | false;
  /**
   * Unsent bytes the socket may hold (default 1 MiB); past that the app is not reading, and the
   * socket is terminated, reported as `closed(1008, 'not reading: too much unsent data')`.
   */
  readonly maxBufferedBytes?: number;
  /** Time source of the rate limit and the keepalive (default real, unref'd timers). */
  readonly clock?: Clock;
  /**
   * Decides each `endpointId` the streamer sends, with the ID it asks for and the one it has
   * (undefined before its first). Default: commit every one, as Wilbur renames a streamer that
   * identifies again.
   */
  readonly decideStreamerId?: (requestedId: string, currentId: string | undefined) => StreamerIdDecision;
}

/**
 * What becomes of an `endpointId`:
 * - `commit`: confirmed as asked; it is the streamer's ID from now on (`identified`).
 * - `keep`: the streamer keeps the ID it has: `endpointIdConfirm` names that one, which the app
 *   reads as the server's final word (as after Wilbur's de-duplication); the socket stays up.
 *   For a streamer that has no ID yet it is a `refuse`.
 * - `refuse`: the socket is closed with 1008 and `reason` (no peer content in it).
 * Both refusals emit `streamerIdRefused` first.
 */
export type StreamerIdDecision =
  | { readonly kind: 'commit' }
  | { readonly kind: 'keep' }
  | { readonly kind: 'refuse'; readonly reason: string };

const COMMIT: StreamerIdDecision = { kind: 'commit' };

export type StreamerEndpointEvents = {
  /** The streamer sent `endpointId` and was confirmed; fires again if it re-identifies. */
  identified: [streamerId: string];
  /** An `endpointId` was refused (decideStreamerId): the socket kept its ID, or is being closed (`closed` follows). */
  streamerIdRefused: [requestedId: string, outcome: 'kept' | 'closed'];
  /** The streamer's SDP offer for a connected player. */
  offer: [playerId: string, sdp: string];
  /** The streamer's answer to a player's offer (the pre-5.5 browser-offers flow). */
  answer: [playerId: string, sdp: string];
  iceCandidate: [playerId: string, candidate: IceCandidateInit];
  /** The streamer asks the server to drop a player (e.g. its own AFK or player limits). */
  disconnectPlayer: [playerId: string, reason: string | undefined];
  /** A frame was rejected; `closed` follows. */
  protocolError: [reason: string];
  /** Exactly once, however the socket ends. */
  closed: [code: number, reason: string];
};

/**
 * Messages from the streamer for players not connected (raced with a disconnect) are dropped,
 * as Wilbur drops what it cannot route. Every send is a no-op once closed.
 */
export class StreamerEndpoint extends EventEmitter<StreamerEndpointEvents> {
  private readonly connection: SignallingSocket<'streamer'>;
  private readonly players = new Set<string>();
  private currentStreamerId: string | undefined;
  private readonly decideStreamerId: (requestedId: string, currentId: string | undefined) => StreamerIdDecision;

  constructor(socket: WebSocket, options: StreamerEndpointOptions = {}) {
    super();
    this.decideStreamerId = options.decideStreamerId ?? (() => COMMIT);
    this.connection = new SignallingSocket(
      socket,
      'streamer',
      {
        message: (message) => this.onMessage(message),
        protocolError: (reason) => this.emit('protocolError', reason),
        closed: (code, reason) => {
          this.players.clear();
          this.emit('closed', code, reason);
        },
      },
      {
        greeting: [createConfig(options.peerConnectionOptions ?? {}), createIdentify()],
        maxMessageBytes: options.maxMessageBytes,
        keepalive: options.keepalive ?? false,
        rateLimit: options.rateLimit ?? false,
        maxBufferedBytes: options.maxBufferedBytes,
        clock: options.clock,
      },
    );
  }

  /** The committed streamer ID, once the streamer has identified. */
  get streamerId(): string | undefined {
    return this.currentStreamerId;
  }

  get isOpen(): boolean {
    return this.connection.isOpen;
  }

  /** True between connectPlayer(playerId) and disconnectPlayer(playerId) (or the socket's close). */
  hasPlayer(playerId: string): boolean {
    return this.players.has(playerId);
  }

  /** Sends `playerConnected{playerId, dataChannel:true, sfu:false}`; the streamer answers with an offer. */
  connectPlayer(playerId: string): void {
    if (!this.connection.isOpen) return;
    assertPlayerId(playerId);
    if (this.currentStreamerId === undefined) throw new SignallingUsageError('wrong_state', 'the streamer has not identified yet');
    if (this.players.has(playerId)) throw new SignallingUsageError('wrong_state', `player ${playerId} is already connected`);
    this.players.add(playerId);
    this.connection.send(createPlayerConnected(playerId));
  }

  sendAnswer(playerId: string, sdp: string): void {
    if (!this.connection.isOpen) return;
    this.assertConnected(playerId);
    this.connection.send(createAnswer(sdp, { playerId }));
  }

  sendIceCandidate(playerId: string, candidate: IceCandidateInit): void {
    if (!this.connection.isOpen) return;
    this.assertConnected(playerId);
    this.connection.send(createIceCandidate(candidate, playerId));
  }

  /** Sends `playerDisconnected`; the streamer closes that peer connection. A no-op for an unknown player. */
  disconnectPlayer(playerId: string): void {
    if (!this.players.delete(playerId)) return;
    this.connection.send(createPlayerDisconnected(playerId));
  }

  /** Closes the socket (default 1000) and reports `closed` at once. Idempotent. */
  close(code: number = CLOSE_CODES.normal, reason = ''): void {
    this.connection.close(code, reason);
  }

  private onMessage(message: StreamerToServerMessage): void {
    switch (message.type) {
      case 'endpointId':
        this.onEndpointId(message.id);
        return;
      case 'offer':
        if (this.players.has(message.playerId)) this.emit('offer', message.playerId, message.sdp);
        return;
      case 'answer':
        if (this.players.has(message.playerId)) this.emit('answer', message.playerId, message.sdp);
        return;
      case 'iceCandidate':
        if (this.players.has(message.playerId)) this.emit('iceCandidate', message.playerId, message.candidate);
        return;
      case 'disconnectPlayer':
        if (this.players.has(message.playerId)) this.emit('disconnectPlayer', message.playerId, message.reason);
        return;
      case 'ping':
        this.connection.send(createPong(message.time));
        return;
      case 'pong':
      case 'layerPreference':
        // pong: we keep alive with protocol pings. layerPreference: SFU-only; we never present as one.
        return;
      default: {
        const unreachable: never = message;
        return unreachable;
      }
    }
  }

  private onEndpointId(requestedId: string): void {
    const decision = this.decideStreamerId(requestedId, this.currentStreamerId);
    const current = this.currentStreamerId;
    switch (decision.kind) {
      case 'commit':
        this.currentStreamerId = requestedId;
        this.connection.send(createEndpointIdConfirm(requestedId));
        this.emit('identified', requestedId);
        return;
      case 'keep':
        if (current !== undefined) {
          this.emit('streamerIdRefused', requestedId, 'kept');
          this.connection.send(createEndpointIdConfirm(current));
          return;
        }
        this.refuse(requestedId, 'streamer id refused');
        return;
      case 'refuse':
        this.refuse(requestedId, decision.reason);
        return;
      default: {
        const unreachable: never = decision;
        return unreachable;
      }
    }
  }

  private refuse(requestedId: string, reason: string): void {
    this.emit('streamerIdRefused', requestedId, 'closed');
    this.connection.close(CLOSE_CODES.policyViolation, reason);
  }

  private assertConnected(playerId: string): void {
    if (!this.players.has(playerId)) throw new SignallingUsageError('wrong_state', `player ${playerId} is not connected`);
  }
}

function assertPlayerId(playerId: string): void {
  if (!isValidId(playerId)) throw new SignallingUsageError('invalid_argument', `playerId must be 1–${FIELD_LIMITS.id} characters`);
}
