// The one door of @pixelfleet/signaling: the Pixel Streaming signalling protocol (messages,
// edge parser, keepalive, the server-side endpoints facing a streamer and a player, and the
// table of viewer closes, which the browser page imports alone as `@pixelfleet/signaling/viewer-closes`).
export {
  SIGNALLING_PROTOCOL_VERSION,
  MESSAGE_TYPES,
  SERVER_EXTENSION_PREFIX,
  isServerExtensionType,
  createConfig,
  createIdentify,
  createEndpointId,
  createEndpointIdConfirm,
  createStreamerIdChanged,
  createListStreamers,
  createStreamerList,
  createSubscribe,
  createUnsubscribe,
  createSubscribeFailed,
  createPlayerConnected,
  createPlayerDisconnected,
  createOffer,
  createAnswer,
  createIceCandidate,
  createDisconnectPlayer,
  createPing,
  createPong,
  createLayerPreference,
  createDataChannelRequest,
  createPeerDataChannelsReady,
  type MessageType,
  type MessageOf,
  type SignallingMessage,
  type StreamerToServerMessage,
  type PlayerToServerMessage,
  type PlayerCatalogueMessage,
  type ResumeMessage,
  PLAYER_EXTENSION_TYPES,
  type ServerToStreamerMessage,
  type ServerToPlayerMessage,
  type ServerExtensionMessage,
  type Routed,
  type Unrouted,
  type JsonValue,
  type IceServer,
  type PeerConnectionOptions,
  type IceCandidateInit,
  type ConfigMessage,
  type IdentifyMessage,
  type EndpointIdMessage,
  type EndpointIdConfirmMessage,
  type StreamerIdChangedMessage,
  type ListStreamersMessage,
  type StreamerListMessage,
  type SubscribeMessage,
  type UnsubscribeMessage,
  type SubscribeFailedMessage,
  type PlayerConnectedMessage,
  type PlayerDisconnectedMessage,
  type OfferMessage,
  type AnswerMessage,
  type IceCandidateMessage,
  type DisconnectPlayerMessage,
  type PingMessage,
  type PongMessage,
  type LayerPreferenceMessage,
  type DataChannelRequestMessage,
  type PeerDataChannelsReadyMessage,
} from './messages';
export {
  parseSignallingMessage,
  DEFAULT_MAX_MESSAGE_BYTES,
  ALLOWED_TYPES,
  type SenderRole,
  type MessageFrom,
  type ParsedMessage,
  type ParseOptions,
} from './parser';
export { FIELD_LIMITS } from './schemas';
export { CLOSE_CODES, MAX_CLOSE_REASON_BYTES, limitCloseReason, type CloseCode } from './close-codes';
export {
  VIEWER_CLOSES,
  VIEWER_CLOSE_NAME_BY_CODE,
  VIEWER_CLOSE_SENTENCES,
  viewerClose,
  type ViewerClose,
  type ViewerCloseEntry,
  type ViewerCloseName,
} from './viewer-closes';
export { SignallingUsageError, type SignallingUsageErrorKind } from './errors';
export { chooseLogFormat, logDestination, type LogFormat } from './log-format';
export { createLogger, createRequestLoggerFactory, redactSecrets, redactUrl, SECRET_KEYS, type Logger } from './logger';
export { systemClock, ManualClock, type Clock, type TimerHandle } from './clock';
export { TokenBucket, type RateLimitOptions } from './token-bucket';
export { Listeners, type EventMap, type ListenerErrorHandler } from './listeners';
export { backoffDelayMs, DEFAULT_BACKOFF, type BackoffOptions } from './backoff';
export {
  encodeRelayedSignal,
  decodeViewerToRelay,
  decodeRelayToViewer,
  type ViewerToRelaySignal,
  type RelayToViewerSignal,
  type DecodedSignal,
} from './relayed-signals';
export {
  Keepalive,
  DEFAULT_KEEPALIVE_INTERVAL_MS,
  DEFAULT_KEEPALIVE_TIMEOUT_MS,
  type KeepaliveOptions,
} from './keepalive';
export {
  KEEPALIVE_TIMEOUT_REASON,
  DEFAULT_MAX_BUFFERED_BYTES,
  NOT_READING_REASON,
  TOO_MANY_MESSAGES_REASON,
  isFrameError,
  type EndpointKeepaliveOptions,
} from './signalling-socket';
export {
  StreamerEndpoint,
  type StreamerEndpointOptions,
  type StreamerEndpointEvents,
  type StreamerIdDecision,
} from './streamer-endpoint';
export {
  PlayerEndpoint,
  UNKNOWN_STREAMER_MESSAGE,
  DEFAULT_PLAYER_RATE_LIMIT,
  type PlayerEndpointOptions,
  type PlayerEndpointEvents,
  type PlayerAnswer,
} from './player-endpoint';
export { SignallingJournal, JOURNAL_MAX_FRAMES, JOURNAL_MAX_BYTES, type JournalReplay } from './signalling-journal';
export { weakSecretReason, MIN_SECRET_CHARS, MIN_SECRET_BITS, PLACEHOLDER_MARK, SECRET_ADVICE } from './secret-strength';
