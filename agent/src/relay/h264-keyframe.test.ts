import { describe, expect, it } from 'vitest';
import { startsKeyframe } from './h264-keyframe';

describe('startsKeyframe', () => {
  it.each([
    ['a single IDR slice', [0x65, 0x88], true],
    ['a single SPS', [0x67, 0x42], true],
    ['a non-IDR slice', [0x41, 0x9a], false],
    ['a PPS alone', [0x68, 0xce], false],
    ['the first FU-A fragment of an IDR', [0x7c, 0x85, 0x00], true],
    ['a middle FU-A fragment of an IDR', [0x7c, 0x05, 0x00], false],
    ['the first FU-A fragment of a non-IDR slice', [0x7c, 0x81, 0x00], false],
    ['a STAP-A of SPS and PPS', [0x78, 0x00, 0x02, 0x67, 0x42, 0x00, 0x02, 0x68, 0xce], true],
    ['a STAP-A whose second unit is an IDR', [0x78, 0x00, 0x02, 0x06, 0x05, 0x00, 0x02, 0x65, 0x88], true],
    ['a STAP-A of SEI and a P slice', [0x78, 0x00, 0x02, 0x06, 0x05, 0x00, 0x02, 0x41, 0x9a], false],
    ['a STAP-A with a zero size', [0x78, 0x00, 0x00, 0x41], false],
    ['an empty payload', [], false],
  ])('%s → %s', (_name, bytes, expected) => {
    expect(startsKeyframe(Uint8Array.from(bytes))).toBe(expected);
  });
});
