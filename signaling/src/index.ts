// The one door of @pixelfleet/signaling: the Pixel Streaming signalling protocol.
// The message types, parser and endpoints arrive with the streaming issue (#3).
export const SIGNALLING_PROTOCOL_VERSION = '1.3.0';
