// Plain values the relay exchanges with the signalling code.

export type MediaKind = 'video' | 'audio';

/** An ICE candidate as Pixel Streaming's `iceCandidate` message carries it. */
export interface RelayIceCandidate {
  /** `candidate:…` line, without `a=`. */
  candidate: string;
  sdpMid?: string | null;
  sdpMLineIndex?: number | null;
}
