// The one door of @pixelfleet/web-player: the viewer page served at {share_url}/<projectId> (HTML
// shell, CSP, in-memory bundle) and the wire contracts the control plane shares with it:
// signalling extension messages, the iframe API and telemetry rows. Close codes live in
// `@pixelfleet/signaling` (viewer-closes.ts); describeClose is how the page reads them.

export { bundlePlayer, FRONTEND_LIBRARIES, FRONTEND_LIBRARY, type FrontendLibrary, type PlayerBundle } from './bundle';
export { playerContentSecurityPolicy, renderPlayerPage, type PlayerCspOptions, type PlayerPageOptions } from './page';
export { describeClose, type CloseDescription, type ViewerCloseReasonName } from './close-codes';
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
