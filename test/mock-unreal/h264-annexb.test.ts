// Annex-B splitting, access-unit grouping and SPS parsing, on hand-made streams and on the fixture.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { AnnexBError, groupAccessUnits, NalUnitType, parseSps, splitNalUnits, unescapeRbsp } from './h264-annexb';
import { DEFAULT_FIXTURE_PATH } from './fixture';

const SC3 = [0, 0, 1];
const SC4 = [0, 0, 0, 1];

/** NAL header byte: nal_ref_idc 3 unless given, type `type`. */
const nal = (type: number, body: number[], nri = 3): number[] => [(nri << 5) | type, ...body];
/** A slice whose first_mb_in_slice is 0 (first bit 1) or not (first bits 010 = 1). */
const slice = (type: number, first = true): number[] => nal(type, [first ? 0x88 : 0x48, 0x84, 0x21]);

describe('splitNalUnits', () => {
  it('splits on 3- and 4-byte start codes and gives the same units either way', () => {
    const units = [nal(7, [0x42, 0xc0, 0x1f]), nal(8, [0xce, 0x3c, 0x80]), slice(5)];
    const with3 = splitNalUnits(Buffer.from(units.flatMap((u) => [...SC3, ...u])));
    const with4 = splitNalUnits(Buffer.from(units.flatMap((u) => [...SC4, ...u])));
    const mixed = splitNalUnits(Buffer.from([...SC4, ...(units[0] ?? []), ...SC3, ...(units[1] ?? []), ...SC4, ...(units[2] ?? [])]));
    for (const split of [with3, with4, mixed]) {
      expect(split.map((u) => u.type)).toEqual([7, 8, 5]);
      expect(split.map((u) => [...u.data])).toEqual(units);
    }
  });

  it('drops trailing zero bytes and leading zero padding', () => {
    const split = splitNalUnits(Buffer.from([0, 0, 0, 0, ...SC3, ...nal(1, [0x88, 0x10]), 0, 0, ...SC4, ...nal(1, [0x88, 0x20]), 0]));
    expect(split.map((u) => [...u.data])).toEqual([nal(1, [0x88, 0x10]), nal(1, [0x88, 0x20])]);
  });

  it('keeps 00 00 03 inside a unit (emulation prevention is not a start code)', () => {
    const body = [0x88, 0x00, 0x00, 0x03, 0x01, 0x55];
    expect([...(splitNalUnits(Buffer.from([...SC3, ...nal(1, body)]))[0]?.data ?? [])]).toEqual(nal(1, body));
  });

  it('rejects streams without a start code, with garbage before it, or with forbidden_zero_bit set', () => {
    expect(splitNalUnits(Buffer.alloc(0))).toEqual([]);
    expect(() => splitNalUnits(Buffer.from([1, 2, 3, 4]))).toThrow(AnnexBError);
    expect(() => splitNalUnits(Buffer.from([7, ...SC3, ...slice(5)]))).toThrow(/before the first start code/);
    expect(() => splitNalUnits(Buffer.from([...SC3, 0x85, 0x88]))).toThrow(/forbidden_zero_bit/);
  });
});

describe('groupAccessUnits', () => {
  const units = (...nals: number[][]): ReturnType<typeof splitNalUnits> => splitNalUnits(Buffer.from(nals.flatMap((n) => [...SC4, ...n])));

  it('puts SPS, PPS and the IDR slice in one keyframe access unit and each later picture in its own', () => {
    const aus = groupAccessUnits(units(nal(7, [0x42]), nal(8, [0xce]), slice(5), slice(1), slice(1)));
    expect(aus.map((au) => au.nalUnits.map((u) => u.type))).toEqual([[7, 8, 5], [1], [1]]);
    expect(aus.map((au) => au.keyframe)).toEqual([true, false, false]);
  });

  it('keeps the slices of one picture together (first_mb_in_slice != 0 continues the picture)', () => {
    const aus = groupAccessUnits(units(nal(7, [0x42]), nal(8, [0xce]), slice(5), slice(5, false), slice(1), slice(1, false)));
    expect(aus.map((au) => au.nalUnits.map((u) => u.type))).toEqual([[7, 8, 5, 5], [1, 1]]);
  });

  it('starts a new access unit at an AUD, SPS or SEI after a picture, which then belongs to the next picture', () => {
    const aus = groupAccessUnits(units(slice(5), nal(9, [0xf0]), slice(1), nal(6, [0x05]), slice(1), nal(7, [0x42]), nal(8, [0xce]), slice(5)));
    expect(aus.map((au) => au.nalUnits.map((u) => u.type))).toEqual([[5], [9, 1], [6, 1], [7, 8, 5]]);
  });

  it('drops parameter sets left after the last picture', () => {
    expect(groupAccessUnits(units(slice(5), nal(7, [0x42]))).map((au) => au.nalUnits.length)).toEqual([1]);
  });
});

/** MSB-first bit writer with exp-Golomb codes, to build SPS test vectors. */
class BitWriter {
  private bits: number[] = [];
  u(count: number, value: number): this {
    for (let i = count - 1; i >= 0; i--) this.bits.push(Math.floor(value / 2 ** i) % 2);
    return this;
  }
  ue(value: number): this {
    const length = Math.floor(Math.log2(value + 1));
    return this.u(length, 0).u(length + 1, value + 1);
  }
  se(value: number): this {
    return this.ue(value > 0 ? 2 * value - 1 : -2 * value);
  }
  /** rbsp_trailing_bits, then emulation prevention, then the NAL header. */
  nal(header: number): Buffer {
    this.u(1, 1);
    while (this.bits.length % 8 !== 0) this.bits.push(0);
    const rbsp: number[] = [];
    for (let i = 0; i < this.bits.length; i += 8) rbsp.push(parseInt(this.bits.slice(i, i + 8).join(''), 2));
    const escaped: number[] = [header];
    let zeros = 0;
    for (const byte of rbsp) {
      if (zeros >= 2 && byte <= 3) {
        escaped.push(3);
        zeros = 0;
      }
      escaped.push(byte);
      zeros = byte === 0 ? zeros + 1 : 0;
    }
    return Buffer.from(escaped);
  }
}

describe('parseSps', () => {
  it('reads the fixture: Constrained Baseline level 3.1, 1280x720, 30 fps', () => {
    const sps = splitNalUnits(readFileSync(DEFAULT_FIXTURE_PATH)).find((u) => u.type === NalUnitType.Sps);
    if (sps === undefined) throw new Error('fixture has no SPS');
    const parsed = parseSps(sps);
    expect(parsed).toMatchObject({ profileIdc: 0x42, levelIdc: 31, width: 1280, height: 720, fps: 30 });
    // RFC 6184 Table 5: Constrained Baseline is profile_idc 42 with constraint_set1 set (x1xx0000),
    // so the SDP's 42e01f and the stream's 42c01f name the same profile.
    expect(parsed.constraintFlags & 0x40).toBe(0x40);
    expect(parsed.profileLevelId).toBe('42c01f');
  });

  it('reads a High-profile SPS with scaling lists, cropping (1920x1080 from 1088) and 25 fps timing', () => {
    const w = new BitWriter()
      .u(8, 100).u(8, 0).u(8, 40) // profile_idc, constraint flags, level_idc
      .ue(0) // seq_parameter_set_id
      .ue(1).ue(0).ue(0).u(1, 0) // chroma_format_idc 4:2:0, bit depths, qpprime bypass
      .u(1, 1) // seq_scaling_matrix_present_flag
      .u(1, 1).se(-8) // list 0 present: delta -8 sets nextScale 0, ending the list
      .u(7, 0) // lists 1..7 absent
      .ue(0) // log2_max_frame_num_minus4
      .ue(2) // pic_order_cnt_type 2
      .ue(4).u(1, 0) // max_num_ref_frames, gaps
      .ue(119).ue(67) // 120 MBs wide, 68 map units high
      .u(1, 1).u(1, 1) // frame_mbs_only, direct_8x8_inference
      .u(1, 1).ue(0).ue(0).ue(0).ue(4) // frame cropping: bottom 4 × CropUnitY 2 = 8 lines
      .u(1, 1) // vui_parameters_present_flag
      .u(1, 1).u(8, 255).u(16, 1).u(16, 1) // aspect ratio: Extended_SAR 1:1
      .u(1, 0) // overscan_info_present_flag
      .u(1, 1).u(3, 5).u(1, 0).u(1, 1).u(8, 1).u(8, 1).u(8, 1) // video signal type + colour description
      .u(1, 0) // chroma_loc_info_present_flag
      .u(1, 1).u(32, 1).u(32, 50).u(1, 1); // timing: 50 / (2 × 1) = 25 fps
    const parsed = parseSps({ type: 7, data: w.nal(0x67) });
    expect(parsed).toMatchObject({ profileIdc: 100, levelIdc: 40, width: 1920, height: 1080, fps: 25, profileLevelId: '640028' });
  });

  it('reports no frame rate without VUI timing info and rejects non-SPS or truncated units', () => {
    const w = new BitWriter().u(8, 66).u(8, 0xe0).u(8, 30).ue(0).ue(0).ue(0).ue(2).ue(1).u(1, 0).ue(39).ue(29).u(1, 1).u(1, 1).u(1, 0).u(1, 0);
    expect(parseSps({ type: 7, data: w.nal(0x67) })).toMatchObject({ width: 640, height: 480, fps: undefined, profileLevelId: '42e01e' });
    expect(() => parseSps({ type: 8, data: Buffer.from([0x68, 0xce]) })).toThrow(/not an SPS/);
    expect(() => parseSps({ type: 7, data: Buffer.from([0x67, 0x42, 0xc0]) })).toThrow(/ends early/);
  });

  it('removes emulation prevention bytes', () => {
    expect([...unescapeRbsp(Buffer.from([1, 0, 0, 3, 0, 0, 0, 3, 1, 0, 0, 3]))]).toEqual([1, 0, 0, 0, 0, 0, 1, 0, 0]);
  });
});
