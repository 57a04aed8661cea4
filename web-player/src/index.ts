// The one door of @pixelfleet/web-player: the viewer page served at {share_url}/<projectId>.
// The page itself arrives with the streaming issue (#3).
export const WEB_PLAYER_PACKAGE = '@pixelfleet/web-player';
