// H.264 Annex-B byte streams (ITU-T H.264 Annex B) for the mock Unreal app: splits NAL units on
// 3- and 4-byte start codes, groups them into access units (§7.4.1.2.3) and reads the SPS fields
// the mock reports (profile, level, size, frame rate from the VUI timing info).

export const NalUnitType = {
  NonIdrSlice: 1,
  IdrSlice: 5,
  Sei: 6,
  Sps: 7,
  Pps: 8,
  AccessUnitDelimiter: 9,
  EndOfSequence: 10,
  EndOfStream: 11,
} as const;

/** One NAL unit without its start code: byte 0 is the NAL header. */
export interface NalUnit {
  readonly type: number;
  readonly data: Buffer;
}

/** One coded picture with the non-VCL units that precede it (AUD, SPS, PPS, SEI). */
export interface AccessUnit {
  readonly nalUnits: readonly NalUnit[];
  /** True when the access unit holds an IDR slice (decoding can start here). */
  readonly keyframe: boolean;
}

export class AnnexBError extends Error {
  override readonly name = 'AnnexBError';
}

const START_CODE = Buffer.from([0, 0, 1]);

/**
 * Splits an Annex-B byte stream into NAL units. A 4-byte start code's leading zero and any
 * trailing_zero_8bits are dropped (a NAL unit never ends in 0x00), so both start-code lengths
 * give the same units. Throws AnnexBError when the stream has no start code or a unit sets
 * forbidden_zero_bit.
 */
export function splitNalUnits(stream: Buffer): NalUnit[] {
  const units: NalUnit[] = [];
  let start = stream.indexOf(START_CODE);
  if (start < 0) {
    if (stream.length === 0) return units;
    throw new AnnexBError('no Annex-B start code (00 00 01) found');
  }
  for (let i = 0; i < start; i++) {
    if (stream[i] !== 0) throw new AnnexBError(`non-zero byte before the first start code at offset ${i}`);
  }
  while (start >= 0) {
    const payloadStart = start + START_CODE.length;
    const next = stream.indexOf(START_CODE, payloadStart);
    let end = next < 0 ? stream.length : next;
    while (end > payloadStart && stream[end - 1] === 0) end--;
    if (end > payloadStart) {
      const data = stream.subarray(payloadStart, end);
      const header = data[0] ?? 0;
      if ((header & 0x80) !== 0) {
        throw new AnnexBError(`NAL unit at offset ${payloadStart} sets forbidden_zero_bit`);
      }
      units.push({ type: header & 0x1f, data });
    }
    start = next;
  }
  return units;
}

function isVcl(type: number): boolean {
  return type >= 1 && type <= 5;
}

/** Types that, after a picture's VCL units, start the next access unit (§7.4.1.2.3). */
function startsNewAccessUnit(type: number): boolean {
  return type === NalUnitType.AccessUnitDelimiter || type === NalUnitType.Sps || type === NalUnitType.Pps ||
    type === NalUnitType.Sei || (type >= 14 && type <= 18);
}

/** first_mb_in_slice is the slice header's first ue(v); it is 0 exactly when the first bit is 1. */
function isFirstSliceOfPicture(unit: NalUnit): boolean {
  return ((unit.data[1] ?? 0) & 0x80) !== 0;
}

/**
 * Groups NAL units into access units: a new one starts at an AUD/SPS/PPS/SEI that follows a
 * picture, or at a slice with first_mb_in_slice = 0. Non-VCL units after the last picture
 * (no picture to attach to) are dropped.
 */
export function groupAccessUnits(units: readonly NalUnit[]): AccessUnit[] {
  const accessUnits: AccessUnit[] = [];
  let current: NalUnit[] = [];
  let hasPicture = false;
  const flush = (): void => {
    if (hasPicture) {
      accessUnits.push({ nalUnits: current, keyframe: current.some((u) => u.type === NalUnitType.IdrSlice) });
    }
    current = [];
    hasPicture = false;
  };
  for (const unit of units) {
    if (hasPicture && (startsNewAccessUnit(unit.type) || (isVcl(unit.type) && isFirstSliceOfPicture(unit)))) {
      flush();
    }
    current.push(unit);
    if (isVcl(unit.type)) hasPicture = true;
  }
  flush();
  return accessUnits;
}

/** Removes emulation_prevention_three_byte (00 00 03 → 00 00) to get the RBSP. */
export function unescapeRbsp(data: Buffer): Buffer {
  const out = Buffer.alloc(data.length);
  let length = 0;
  let zeros = 0;
  for (const byte of data) {
    if (zeros >= 2 && byte === 3) {
      zeros = 0;
      continue;
    }
    out[length++] = byte;
    zeros = byte === 0 ? zeros + 1 : 0;
  }
  return out.subarray(0, length);
}

class BitReader {
  private bit = 0;
  constructor(private readonly bytes: Buffer) {}

  u(count: number): number {
    let value = 0;
    for (let i = 0; i < count; i++) {
      const byte = this.bytes[this.bit >> 3];
      if (byte === undefined) throw new AnnexBError('SPS ends early');
      value = value * 2 + ((byte >> (7 - (this.bit & 7))) & 1);
      this.bit++;
    }
    return value;
  }

  flag(): boolean {
    return this.u(1) === 1;
  }

  ue(): number {
    let leadingZeros = 0;
    while (this.u(1) === 0) {
      if (++leadingZeros > 31) throw new AnnexBError('exp-Golomb code longer than 32 bits');
    }
    return 2 ** leadingZeros - 1 + this.u(leadingZeros);
  }

  se(): number {
    const k = this.ue();
    return k % 2 === 1 ? (k + 1) / 2 : -(k / 2);
  }
}

export interface SequenceParameterSet {
  readonly profileIdc: number;
  /** constraint_set0..5 flags and reserved bits, as the byte after profile_idc. */
  readonly constraintFlags: number;
  readonly levelIdc: number;
  /** The 6 hex digits of an SDP profile-level-id for this SPS, e.g. "42c01f". */
  readonly profileLevelId: string;
  readonly width: number;
  readonly height: number;
  /** Frames per second from the VUI timing info (time_scale / 2·num_units_in_tick), if present. */
  readonly fps: number | undefined;
}

const HIGH_PROFILES = new Set([100, 110, 122, 244, 44, 83, 86, 118, 128, 138, 139, 134, 135]);

function skipScalingList(reader: BitReader, size: number): void {
  let last = 8;
  let next = 8;
  for (let j = 0; j < size; j++) {
    if (next !== 0) next = (last + reader.se() + 256) % 256;
    last = next === 0 ? last : next;
  }
}

/** Parses a sequence parameter set NAL unit (§7.3.2.1.1) up to the VUI timing info. */
export function parseSps(unit: NalUnit): SequenceParameterSet {
  if (unit.type !== NalUnitType.Sps) throw new AnnexBError(`NAL unit type ${unit.type} is not an SPS`);
  const reader = new BitReader(unescapeRbsp(unit.data.subarray(1)));
  const profileIdc = reader.u(8);
  const constraintFlags = reader.u(8);
  const levelIdc = reader.u(8);
  reader.ue(); // seq_parameter_set_id
  let chromaFormatIdc = 1;
  let separateColourPlane = false;
  if (HIGH_PROFILES.has(profileIdc)) {
    chromaFormatIdc = reader.ue();
    if (chromaFormatIdc === 3) separateColourPlane = reader.flag();
    reader.ue(); // bit_depth_luma_minus8
    reader.ue(); // bit_depth_chroma_minus8
    reader.u(1); // qpprime_y_zero_transform_bypass_flag
    if (reader.flag()) {
      const lists = chromaFormatIdc === 3 ? 12 : 8;
      for (let i = 0; i < lists; i++) {
        if (reader.flag()) skipScalingList(reader, i < 6 ? 16 : 64);
      }
    }
  }
  reader.ue(); // log2_max_frame_num_minus4
  const picOrderCntType = reader.ue();
  if (picOrderCntType === 0) {
    reader.ue(); // log2_max_pic_order_cnt_lsb_minus4
  } else if (picOrderCntType === 1) {
    reader.u(1); // delta_pic_order_always_zero_flag
    reader.se(); // offset_for_non_ref_pic
    reader.se(); // offset_for_top_to_bottom_field
    const cycle = reader.ue();
    for (let i = 0; i < cycle; i++) reader.se();
  }
  reader.ue(); // max_num_ref_frames
  reader.u(1); // gaps_in_frame_num_value_allowed_flag
  const widthInMbs = reader.ue() + 1;
  const heightInMapUnits = reader.ue() + 1;
  const frameMbsOnly = reader.flag();
  if (!frameMbsOnly) reader.u(1); // mb_adaptive_frame_field_flag
  reader.u(1); // direct_8x8_inference_flag
  let crop = { left: 0, right: 0, top: 0, bottom: 0 };
  if (reader.flag()) crop = { left: reader.ue(), right: reader.ue(), top: reader.ue(), bottom: reader.ue() };

  // Crop units (§7.4.2.1.1, Table 6-1): 4:2:0 halves both axes, 4:2:2 only the horizontal one.
  const chromaArrayType = separateColourPlane ? 0 : chromaFormatIdc;
  const subWidthC = chromaArrayType === 1 || chromaArrayType === 2 ? 2 : 1;
  const subHeightC = chromaArrayType === 1 ? 2 : 1;
  const cropUnitX = chromaArrayType === 0 ? 1 : subWidthC;
  const cropUnitY = (chromaArrayType === 0 ? 1 : subHeightC) * (frameMbsOnly ? 1 : 2);
  const width = widthInMbs * 16 - cropUnitX * (crop.left + crop.right);
  const height = (frameMbsOnly ? 1 : 2) * heightInMapUnits * 16 - cropUnitY * (crop.top + crop.bottom);

  let fps: number | undefined;
  if (reader.flag()) {
    // vui_parameters (Annex E.1.1), as far as timing_info.
    if (reader.flag() && reader.u(8) === 255) reader.u(32); // aspect_ratio_idc == Extended_SAR: sar_width, sar_height
    if (reader.flag()) reader.u(1); // overscan_appropriate_flag
    if (reader.flag()) {
      reader.u(4); // video_format, video_full_range_flag
      if (reader.flag()) reader.u(24); // colour_primaries, transfer_characteristics, matrix_coefficients
    }
    if (reader.flag()) {
      reader.ue(); // chroma_sample_loc_type_top_field
      reader.ue(); // chroma_sample_loc_type_bottom_field
    }
    if (reader.flag()) {
      const numUnitsInTick = reader.u(32);
      const timeScale = reader.u(32);
      if (numUnitsInTick > 0 && timeScale > 0) fps = timeScale / (2 * numUnitsInTick);
    }
  }
  const hex = (n: number): string => n.toString(16).padStart(2, '0');
  return {
    profileIdc,
    constraintFlags,
    levelIdc,
    profileLevelId: `${hex(profileIdc)}${hex(constraintFlags)}${hex(levelIdc)}`,
    width,
    height,
    fps,
  };
}
