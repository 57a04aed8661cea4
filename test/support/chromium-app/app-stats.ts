// What the chromium app's libwebrtc says about its video, as the app writes it (one JSON line
// about every STATS_INTERVAL_MS to the stats file) and as tests read it back. Counters are summed
// over every peer connection the app has had (a closed one keeps its last figures), so they only rise.
import { readFileSync } from 'node:fs';

/** How often the app appends a line, ms. */
export const STATS_INTERVAL_MS = 100;

export interface AppPlayerStats {
  playerId: string;
  /** RTCPeerConnection.connectionState when read. */
  connectionState: string;
  keyFramesEncoded: number;
  framesEncoded: number;
  pliCount: number;
  firCount: number;
  /** The encoder's target, bits per second (what the app's bandwidth estimate allows). */
  targetBitrate: number;
  framesPerSecond: number;
  /** 'none', 'cpu', 'bandwidth' or 'other': why libwebrtc is holding the encode back. */
  qualityLimitationReason: string;
}

export interface AppStats {
  /** Epoch ms of this line. */
  at: number;
  /** Frames the game scene has drawn. */
  sceneFrames: number;
  keyFramesEncoded: number;
  framesEncoded: number;
  /** PLIs / FIRs the app's libwebrtc accepted from its peers (a malformed compound packet is not counted). */
  pliCount: number;
  firCount: number;
  /** Epoch ms at which each keyframe left the encoder (encoded-frame tap), oldest first, every player together. */
  keyFrameTimes: number[];
  players: AppPlayerStats[];
}

/** The app's latest stats line, or undefined before the first one. */
export function readLatestAppStats(statsPath: string): AppStats | undefined {
  let text: string;
  try {
    text = readFileSync(statsPath, 'utf8');
  } catch {
    return undefined;
  }
  const lines = text.trimEnd().split('\n');
  // The app may be writing the last line right now: the one before it is whole.
  for (let i = lines.length - 1; i >= 0; i--) {
    try {
      return JSON.parse(lines[i]!) as AppStats;
    } catch {
      continue;
    }
  }
  return undefined;
}
