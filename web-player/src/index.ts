// The one door of @pixelfleet/web-player: the viewer page served at {share_url}/<projectId> (HTML
// shell, CSP, in-memory bundle) and the wire contracts the control plane shares with it: close
// codes, signalling extension messages, the iframe API and telemetry rows.

export { bundlePlayer, type PlayerBundle } from './bundle';
export { RESUMING_CLOSE_CODE } from './player/signalling-resume';
export { escapeHtml, playerContentSecurityPolicy, renderPlayerPage, type PlayerCspOptions, type PlayerPageOptions } from './page';
export {
  CLOSE_CODE_SENTENCES,
  VIEWER_CLOSE_CODES,
  describeClose,
  type CloseCodeEntry,
  type CloseDescription,
  type CloseReasonName,
  type ViewerCloseReasonName,
} from './close-codes';
export {
  ExtensionMessageError,
  PIXELFLEET_MESSAGE_TYPES,
  PIXELFLEET_STATUSES,
  parseExtensionMessage,
  type PixelfleetExtensionMessage,
  type PixelfleetQueueMessage,
  type PixelfleetSessionMessage,
  type PixelfleetStatus,
  type PixelfleetStatusMessage,
} from './extension-messages';
export {
  EMBED_SOURCE,
  HOST_SOURCE,
  MAX_UI_INTERACTION_CODE_UNITS,
  parseHostMessage,
  type EmbedQueueState,
  type EmbedResponseMessage,
  type EmbedState,
  type EmbedStateMessage,
  type HostToPlayerMessage,
  type HostUiInteractionMessage,
  type PlayerToHostMessage,
  type UiInteractionData,
} from './embed-messages';
export {
  MAX_ROWS_PER_REQUEST,
  VIEWER_TOKEN_HEADER,
  type ClientDetails,
  type TelemetryEventName,
  type TelemetryEventRow,
  type TelemetryRequestBody,
  type TelemetryRow,
  type TelemetryStatsRow,
} from './telemetry/rows';
