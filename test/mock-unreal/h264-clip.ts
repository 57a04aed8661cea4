// The pre-encoded H.264 clip the mock Unreal app loops instead of running an encoder: read once at
// start, split into access units, checked, and turned into RTP payloads shared by every player.
import { readFileSync } from 'node:fs';
import { AnnexBError, groupAccessUnits, NalUnitType, parseSps, splitNalUnits, type AccessUnit, type NalUnit } from './h264-annexb';
import { buildPayloads, type PayloadOptions } from './h264-rtp';
import { DEFAULT_FIXTURE_PATH } from './fixture';

export interface ClipFrame {
  /** RTP payloads of this access unit, in order; shared by all players, never mutated. */
  readonly payloads: readonly Buffer[];
  readonly keyframe: boolean;
  /** Encoded size of the access unit in bytes (without start codes). */
  readonly bytes: number;
}

export interface H264Clip {
  readonly frames: readonly ClipFrame[];
  /** Indices of keyframes in `frames`, ascending; never empty, and frames[0] is a keyframe. */
  readonly keyframeIndices: readonly number[];
  readonly fps: number;
  readonly width: number;
  readonly height: number;
  /** profile-level-id of the stream's SPS, e.g. "42c01f" (Constrained Baseline, level 3.1). */
  readonly profileLevelId: string;
  readonly totalBytes: number;
}

export interface LoadClipOptions extends PayloadOptions {
  /** Frame rate to use when the SPS carries no VUI timing info (default 30). */
  readonly fallbackFps?: number;
}

/**
 * Makes every IDR access unit self-contained: one without in-band SPS/PPS gets the most recent
 * ones prepended, so a player can start at any keyframe. Throws if the first IDR has none.
 */
function withParameterSets(accessUnits: readonly AccessUnit[]): AccessUnit[] {
  let sps: NalUnit | undefined;
  let pps: NalUnit | undefined;
  return accessUnits.map((au) => {
    sps = au.nalUnits.find((u) => u.type === NalUnitType.Sps) ?? sps;
    pps = au.nalUnits.find((u) => u.type === NalUnitType.Pps) ?? pps;
    if (!au.keyframe) return au;
    if (sps === undefined || pps === undefined) throw new AnnexBError('an IDR access unit has no SPS/PPS before it');
    const has = (type: number): boolean => au.nalUnits.some((u) => u.type === type);
    const prefix = [...(has(NalUnitType.Sps) ? [] : [sps]), ...(has(NalUnitType.Pps) ? [] : [pps])];
    return prefix.length === 0 ? au : { nalUnits: [...prefix, ...au.nalUnits], keyframe: true };
  });
}

/** Builds a clip from an Annex-B byte stream. Throws AnnexBError on a stream it cannot loop. */
export function clipFromAnnexB(stream: Buffer, options: LoadClipOptions = {}): H264Clip {
  const accessUnits = withParameterSets(groupAccessUnits(splitNalUnits(stream)));
  const first = accessUnits[0];
  if (first === undefined) throw new AnnexBError('the stream holds no pictures');
  if (!first.keyframe) throw new AnnexBError('the stream does not start with an IDR picture');
  const spsUnit = first.nalUnits.find((u) => u.type === NalUnitType.Sps);
  if (spsUnit === undefined) throw new AnnexBError('the first access unit has no SPS');
  const sps = parseSps(spsUnit);
  const fps = sps.fps ?? options.fallbackFps ?? 30;
  const frames = accessUnits.map((au): ClipFrame => ({
    payloads: buildPayloads(au.nalUnits.map((u) => u.data), options),
    keyframe: au.keyframe,
    bytes: au.nalUnits.reduce((sum, u) => sum + u.data.length, 0),
  }));
  const keyframeIndices = frames.flatMap((f, i) => (f.keyframe ? [i] : []));
  return {
    frames,
    keyframeIndices,
    fps,
    width: sps.width,
    height: sps.height,
    profileLevelId: sps.profileLevelId,
    totalBytes: frames.reduce((sum, f) => sum + f.bytes, 0),
  };
}

export function loadClip(path: string = DEFAULT_FIXTURE_PATH, options: LoadClipOptions = {}): H264Clip {
  return clipFromAnnexB(readFileSync(path), options);
}

/** Index of the first keyframe at or after `index` (wrapping to the clip's start). */
export function nextKeyframeIndex(clip: H264Clip, index: number): number {
  return clip.keyframeIndices.find((k) => k >= index) ?? clip.keyframeIndices[0] ?? 0;
}
