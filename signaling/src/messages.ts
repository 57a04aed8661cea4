// The signalling message catalogue (pixel-streaming.md §1.2) that a streamer and a plain player
// exchange with a server, as one discriminated union on `type`, plus builders so that callers
// never hand-write JSON. Parsing untrusted frames into these types is parser.ts's job.
// Longer than ~400 lines: one catalogue, one type and one builder per message of the protocol;
// split, the union would no longer be one place.

/** Advertised in `config`; informational only, nothing compares it (§1.5). */
export const SIGNALLING_PROTOCOL_VERSION = '1.3.0';

/** Every message type we model. SFU-only and deprecated types are left out on purpose (catalogue.test.ts). */
export const MESSAGE_TYPES = [
  'config',
  'identify',
  'endpointId',
  'endpointIdConfirm',
  'streamerIdChanged',
  'listStreamers',
  'streamerList',
  'subscribe',
  'unsubscribe',
  'subscribeFailed',
  'playerConnected',
  'playerDisconnected',
  'offer',
  'answer',
  'iceCandidate',
  'disconnectPlayer',
  'ping',
  'pong',
  'layerPreference',
  'dataChannelRequest',
  'peerDataChannelsReady',
] as const;

export type MessageType = (typeof MESSAGE_TYPES)[number];

/** One entry of `RTCConfiguration.iceServers`. Note `credential`, not `credentials` (§1.4). */
export interface IceServer {
  readonly urls: string | readonly string[];
  readonly username?: string;
  readonly credential?: string;
}

/** What `config.peerConnectionOptions` carries: the browser passes it to `new RTCPeerConnection()`. */
export interface PeerConnectionOptions {
  readonly iceServers?: readonly IceServer[];
  /** `relay` forces TURN (the frontend's ForceTURN). */
  readonly iceTransportPolicy?: 'all' | 'relay';
}

/** `RTCIceCandidateInit` as it travels in `iceCandidate.candidate`. */
export interface IceCandidateInit {
  /** The `candidate:…` attribute line; empty only for an end-of-candidates marker. */
  readonly candidate: string;
  readonly sdpMid: string;
  readonly sdpMLineIndex: number;
  readonly usernameFragment?: string;
}

export interface ConfigMessage {
  readonly type: 'config';
  readonly peerConnectionOptions: PeerConnectionOptions;
  readonly protocolVersion?: string;
}

export interface IdentifyMessage {
  readonly type: 'identify';
}

export interface EndpointIdMessage {
  readonly type: 'endpointId';
  /** The streamer ID the streamer asks for (`-PixelStreamingID=`, default `DefaultStreamer`). */
  readonly id: string;
  readonly protocolVersion?: string;
}

export interface EndpointIdConfirmMessage {
  readonly type: 'endpointIdConfirm';
  readonly committedId: string;
}

export interface StreamerIdChangedMessage {
  readonly type: 'streamerIdChanged';
  /** Spelled `newID` on the wire. */
  readonly newID: string;
}

export interface ListStreamersMessage {
  readonly type: 'listStreamers';
}

export interface StreamerListMessage {
  readonly type: 'streamerList';
  readonly ids: readonly string[];
}

export interface SubscribeMessage {
  readonly type: 'subscribe';
  readonly streamerId: string;
}

export interface UnsubscribeMessage {
  readonly type: 'unsubscribe';
}

export interface SubscribeFailedMessage {
  readonly type: 'subscribeFailed';
  readonly message: string;
}

export interface PlayerConnectedMessage {
  readonly type: 'playerConnected';
  readonly playerId: string;
  /** Always true in practice: the streamer opens its data channel in the offer. */
  readonly dataChannel: boolean;
  readonly sfu: boolean;
}

export interface PlayerDisconnectedMessage {
  readonly type: 'playerDisconnected';
  readonly playerId: string;
}

export interface OfferMessage {
  readonly type: 'offer';
  readonly sdp: string;
  /** Set by a streamer (routing); absent towards a 5.5/5.6 player. */
  readonly playerId?: string;
  readonly sfu?: boolean;
  readonly multiplex?: boolean;
  readonly scalabilityMode?: string;
}

export interface AnswerMessage {
  readonly type: 'answer';
  readonly sdp: string;
  readonly playerId?: string;
  /** The frontend sends its WebRTCMinBitrate × 1000 (default 0). */
  readonly minBitrateBps?: number;
  readonly maxBitrateBps?: number;
}

export interface IceCandidateMessage {
  readonly type: 'iceCandidate';
  readonly candidate: IceCandidateInit;
  readonly playerId?: string;
}

export interface DisconnectPlayerMessage {
  readonly type: 'disconnectPlayer';
  readonly playerId: string;
  readonly reason?: string;
}

export interface PingMessage {
  readonly type: 'ping';
  /** The sender's clock; the frontend sends epoch milliseconds, so not an int32. */
  readonly time: number;
}

export interface PongMessage {
  readonly type: 'pong';
  /** Echo of `ping.time`. */
  readonly time: number;
}

export interface LayerPreferenceMessage {
  readonly type: 'layerPreference';
  readonly spatialLayer: number;
  readonly temporalLayer: number;
  readonly playerId?: string;
}

export interface DataChannelRequestMessage {
  readonly type: 'dataChannelRequest';
}

export interface PeerDataChannelsReadyMessage {
  readonly type: 'peerDataChannelsReady';
}

export type SignallingMessage =
  | ConfigMessage
  | IdentifyMessage
  | EndpointIdMessage
  | EndpointIdConfirmMessage
  | StreamerIdChangedMessage
  | ListStreamersMessage
  | StreamerListMessage
  | SubscribeMessage
  | UnsubscribeMessage
  | SubscribeFailedMessage
  | PlayerConnectedMessage
  | PlayerDisconnectedMessage
  | OfferMessage
  | AnswerMessage
  | IceCandidateMessage
  | DisconnectPlayerMessage
  | PingMessage
  | PongMessage
  | LayerPreferenceMessage
  | DataChannelRequestMessage
  | PeerDataChannelsReadyMessage;

/** The message of one type. */
export type MessageOf<T extends MessageType> = Extract<SignallingMessage, { readonly type: T }>;

/** A streamer's message with the `playerId` it must carry for the server to route it. */
export type Routed<M extends { readonly playerId?: string }> = Omit<M, 'playerId'> & { readonly playerId: string };

/** A player's message after the edge dropped any `playerId` it claimed (the server knows who sent it). */
export type Unrouted<M> = Omit<M, 'playerId'>;

/** What a streamer (the Unreal app) may send to a server. */
export type StreamerToServerMessage =
  | EndpointIdMessage
  | Routed<OfferMessage>
  | Routed<AnswerMessage>
  | Routed<IceCandidateMessage>
  | DisconnectPlayerMessage
  | LayerPreferenceMessage
  | PingMessage
  | PongMessage;

/**
 * Our own player → server message, first on a socket opened to resume a session whose signalling
 * dropped while its media kept flowing: the token handed out in `pixelfleetSession` proves that
 * this browser is the session's viewer. Not part of Epic's catalogue (MESSAGE_TYPES).
 */
export interface ResumeMessage {
  readonly type: 'pixelfleetResume';
  readonly viewerToken: string;
  /**
   * Frames the page has read from the server on the session's sockets (signalling-journal.ts): the
   * server sends again what came after. Absent from a page that keeps no count (it gets no replay).
   */
  readonly received?: number;
}

/** Our player → server extension types; the parser accepts them from a player only. */
export const PLAYER_EXTENSION_TYPES = ['pixelfleetResume'] as const;

/** What a player may send to a server: Epic's catalogue messages plus our extension. */
export type PlayerToServerMessage = PlayerCatalogueMessage | ResumeMessage;

/** What Epic's browser frontend may send to a server. `offer` is the pre-5.5 browser-offers flow. */
export type PlayerCatalogueMessage =
  | ListStreamersMessage
  | SubscribeMessage
  | UnsubscribeMessage
  | Unrouted<OfferMessage>
  | Unrouted<AnswerMessage>
  | Unrouted<IceCandidateMessage>
  | PingMessage
  | PongMessage
  | DataChannelRequestMessage
  | PeerDataChannelsReadyMessage
  | Unrouted<LayerPreferenceMessage>;

/** What a server sends to a streamer. */
export type ServerToStreamerMessage =
  | ConfigMessage
  | IdentifyMessage
  | EndpointIdConfirmMessage
  | PlayerConnectedMessage
  | PlayerDisconnectedMessage
  | Routed<AnswerMessage>
  | Routed<OfferMessage>
  | Routed<IceCandidateMessage>
  | PingMessage
  | PongMessage;

/** What a server sends to a player (Wilbur 5.5 style: no `playerId` on forwarded messages). */
export type ServerToPlayerMessage =
  | ConfigMessage
  | StreamerListMessage
  | StreamerIdChangedMessage
  | SubscribeFailedMessage
  | Unrouted<OfferMessage>
  | Unrouted<AnswerMessage>
  | Unrouted<IceCandidateMessage>
  | PingMessage
  | PongMessage;

export type JsonValue = string | number | boolean | null | readonly JsonValue[] | { readonly [key: string]: JsonValue };

/** Our own server → player messages (queue position and the like); the `pixelfleet` prefix keeps them clear of Epic's names. */
export interface ServerExtensionMessage {
  readonly type: `pixelfleet${string}`;
  readonly [field: string]: JsonValue;
}

export const SERVER_EXTENSION_PREFIX = 'pixelfleet';

/** True when type names one of our extension messages: the prefix and at least one more character. */
export function isServerExtensionType(type: string): type is `pixelfleet${string}` {
  return type.length > SERVER_EXTENSION_PREFIX.length && type.startsWith(SERVER_EXTENSION_PREFIX);
}

// Builders. Optional fields are left out rather than written as undefined.

export function createConfig(
  peerConnectionOptions: PeerConnectionOptions = {},
  protocolVersion: string = SIGNALLING_PROTOCOL_VERSION,
): ConfigMessage {
  return { type: 'config', peerConnectionOptions, protocolVersion };
}

export function createIdentify(): IdentifyMessage {
  return { type: 'identify' };
}

export function createEndpointId(id: string, protocolVersion?: string): EndpointIdMessage {
  return { type: 'endpointId', id, ...(protocolVersion === undefined ? {} : { protocolVersion }) };
}

export function createEndpointIdConfirm(committedId: string): EndpointIdConfirmMessage {
  return { type: 'endpointIdConfirm', committedId };
}

export function createStreamerIdChanged(newID: string): StreamerIdChangedMessage {
  return { type: 'streamerIdChanged', newID };
}

export function createListStreamers(): ListStreamersMessage {
  return { type: 'listStreamers' };
}

export function createStreamerList(ids: readonly string[]): StreamerListMessage {
  return { type: 'streamerList', ids: [...ids] };
}

export function createSubscribe(streamerId: string): SubscribeMessage {
  return { type: 'subscribe', streamerId };
}

export function createUnsubscribe(): UnsubscribeMessage {
  return { type: 'unsubscribe' };
}

export function createSubscribeFailed(message: string): SubscribeFailedMessage {
  return { type: 'subscribeFailed', message };
}

/** Defaults as Wilbur sends them to a plain player: `dataChannel: true`, `sfu: false`. */
export function createPlayerConnected(
  playerId: string,
  options: { readonly dataChannel?: boolean; readonly sfu?: boolean } = {},
): PlayerConnectedMessage {
  return { type: 'playerConnected', playerId, dataChannel: options.dataChannel ?? true, sfu: options.sfu ?? false };
}

export function createPlayerDisconnected(playerId: string): PlayerDisconnectedMessage {
  return { type: 'playerDisconnected', playerId };
}

export function createOffer(
  sdp: string,
  options: Omit<OfferMessage, 'type' | 'sdp'> = {},
): OfferMessage {
  return { type: 'offer', sdp, ...definedFields(options) };
}

export function createAnswer(
  sdp: string,
  options: Omit<AnswerMessage, 'type' | 'sdp'> = {},
): AnswerMessage {
  return { type: 'answer', sdp, ...definedFields(options) };
}

export function createIceCandidate(candidate: IceCandidateInit, playerId?: string): IceCandidateMessage {
  const init: IceCandidateInit = {
    candidate: candidate.candidate,
    sdpMid: candidate.sdpMid,
    sdpMLineIndex: candidate.sdpMLineIndex,
    ...(candidate.usernameFragment === undefined ? {} : { usernameFragment: candidate.usernameFragment }),
  };
  return { type: 'iceCandidate', candidate: init, ...(playerId === undefined ? {} : { playerId }) };
}

export function createDisconnectPlayer(playerId: string, reason?: string): DisconnectPlayerMessage {
  return { type: 'disconnectPlayer', playerId, ...(reason === undefined ? {} : { reason }) };
}

export function createPing(time: number): PingMessage {
  return { type: 'ping', time };
}

export function createPong(time: number): PongMessage {
  return { type: 'pong', time };
}

export function createLayerPreference(spatialLayer: number, temporalLayer: number, playerId?: string): LayerPreferenceMessage {
  return { type: 'layerPreference', spatialLayer, temporalLayer, ...(playerId === undefined ? {} : { playerId }) };
}

export function createDataChannelRequest(): DataChannelRequestMessage {
  return { type: 'dataChannelRequest' };
}

export function createPeerDataChannelsReady(): PeerDataChannelsReadyMessage {
  return { type: 'peerDataChannelsReady' };
}

/** A copy of options without the keys whose value is undefined, so JSON carries no placeholder keys. */
function definedFields<O extends object>(options: O): Partial<O> {
  const out: Partial<O> = {};
  for (const key of Object.keys(options) as (keyof O)[]) {
    if (options[key] !== undefined) out[key] = options[key];
  }
  return out;
}
