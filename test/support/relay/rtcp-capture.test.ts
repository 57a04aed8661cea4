import { describe, expect, it } from 'vitest';
import { carriesKeyframeRequest } from './rtcp-capture';

const hex = (s: string) => Buffer.from(s.replace(/\s/g, ''), 'hex');
const RR_ONE_REPORT = '81c90007 00000001 00000002 00000000 00001234 00000010 00000000 00000000';
const SDES_CNAME = '81ca0003 00000001 0104 61626364 0000';
const PLI = '81ce0002 00000001 00000002';
const FIR = '84ce0004 00000001 00000000 00000002 05000000';
const BAD_FIR = '84ce0003 00000001 00000000 00000002 05000000';
const REMB = '8fce0005 00000001 00000000 52454d42 01 0b 9387 00000002';
const NACK = '81cd0003 00000001 00000002 00050002';

describe('carriesKeyframeRequest (when the relay asked the app for a keyframe)', () => {
  it('finds a PLI or a FIR alone or anywhere in a compound packet', () => {
    expect(carriesKeyframeRequest(hex(PLI))).toBe(true);
    expect(carriesKeyframeRequest(hex(FIR))).toBe(true);
    expect(carriesKeyframeRequest(hex(RR_ONE_REPORT + SDES_CNAME + PLI))).toBe(true);
  });

  it("counts the request in werift's malformed PLI + short FIR, which libwebrtc drops whole (the request was sent, the app never saw it)", () => {
    expect(carriesKeyframeRequest(hex(PLI + BAD_FIR))).toBe(true);
  });

  it('ignores reports, REMB (PSFB FMT 15) and NACK', () => {
    expect(carriesKeyframeRequest(hex(RR_ONE_REPORT + SDES_CNAME))).toBe(false);
    expect(carriesKeyframeRequest(hex(REMB))).toBe(false);
    expect(carriesKeyframeRequest(hex(NACK))).toBe(false);
  });
});
