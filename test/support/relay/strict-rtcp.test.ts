import { describe, expect, it } from 'vitest';
import { MalformedRtcp, parseRtcpStrictly } from './strict-rtcp';

const hex = (s: string) => Buffer.from(s.replace(/\s/g, ''), 'hex');
// Blocks as libwebrtc writes them.
const RR_ONE_REPORT = '81c90007 00000001 00000002 00000000 00001234 00000010 00000000 00000000';
const SDES_CNAME = '81ca0003 00000001 0104 61626364 0000';
const PLI = '81ce0002 00000001 00000002';
const FIR = '84ce0004 00000001 00000000 00000002 05000000';
const BAD_FIR = '84ce0003 00000001 00000000 00000002 05000000';
const REMB = '8fce0005 00000001 00000000 52454d42 01 0b 9387 00000002';
const NACK = '81cd0003 00000001 00000002 00050002';

describe('parseRtcpStrictly (libwebrtc rules)', () => {
  it('reads a compound packet block by block', () => {
    const blocks = parseRtcpStrictly(hex(RR_ONE_REPORT + SDES_CNAME + PLI + REMB + NACK + FIR));
    expect(blocks.map((b) => b.name)).toEqual(['RR', 'SDES', 'PLI', 'REMB', 'NACK', 'FIR']);
    expect(blocks.map((b) => b.lengthField)).toEqual([7, 3, 2, 5, 3, 4]);
  });

  it('rejects the whole packet when a FIR after a valid PLI is one word short (werift 0.24.4)', () => {
    let error: unknown;
    try {
      parseRtcpStrictly(hex(PLI + BAD_FIR));
    } catch (err) {
      error = err;
    }
    expect(error).toBeInstanceOf(MalformedRtcp);
    expect((error as MalformedRtcp).blockIndex).toBe(1);
    expect((error as Error).message).toMatch(/FIR of 12 bytes holds no FCI entry/);
  });

  it('rejects a length field that runs past the packet, a wrong version and an empty packet', () => {
    expect(() => parseRtcpStrictly(hex('81ce0003 00000001 00000002'))).toThrow(/length field 3 says 16 bytes, only 12/);
    expect(() => parseRtcpStrictly(hex('41ce0002 00000001 00000002'))).toThrow(/version 1/);
    expect(() => parseRtcpStrictly(Buffer.alloc(0))).toThrow(/empty/);
    expect(() => parseRtcpStrictly(hex(PLI + '81ce'))).toThrow(/2 bytes left/);
  });

  it('applies the padding rules: not on an empty payload, not 0, not more than the payload', () => {
    expect(parseRtcpStrictly(hex('a1ce0003 00000001 00000002 00000004')).map((b) => b.name)).toEqual(['PLI']);
    expect(() => parseRtcpStrictly(hex('a1ce0000'))).toThrow(/empty payload/);
    expect(() => parseRtcpStrictly(hex('a1ce0003 00000001 00000002 00000000'))).toThrow(/padding size of 0/);
    expect(() => parseRtcpStrictly(hex('a1ce0003 00000001 00000002 00000011'))).toThrow(/padding size 17 exceeds/);
  });

  it('rejects report blocks that do not fit, an SDES item with no room for END, and a REMB whose SSRC count is wrong', () => {
    expect(() => parseRtcpStrictly(hex('82c90007 00000001' + '00'.repeat(24)))).toThrow(/cannot hold 2 report blocks/);
    expect(() => parseRtcpStrictly(hex('81ca0002 00000005 01027878'))).toThrow(/no room for END/);
    expect(() => parseRtcpStrictly(hex('8fce0005 00000001 00000000 52454d42 02 0b 9387 00000002'))).toThrow(/exactly 2 SSRCs/);
    expect(() => parseRtcpStrictly(hex('81cd0002 00000001 00000002'))).toThrow(/NACK of 8 bytes holds no item/);
  });

  it('names but does not judge block types libwebrtc skips', () => {
    expect(parseRtcpStrictly(hex('8fcd0002 00000001 00000002')).map((b) => b.name)).toEqual(['PT205/15']);
  });
});
