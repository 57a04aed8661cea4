import { describe, expect, it } from 'vitest';
import { RtpHeader, RtpPacket } from 'werift';
import { MAX_RESENDS_PER_PACKET, SendHistory } from './send-history';

const packet = (sequenceNumber: number): RtpPacket => new RtpPacket(new RtpHeader({ sequenceNumber, payloadType: 96 }), Buffer.from([sequenceNumber & 0xff]));

describe('SendHistory', () => {
  it('holds the last `size` packets by sequence number, across the 16-bit wrap', () => {
    const history = new SendHistory(8);
    for (let seq = 65_530; seq < 65_536 + 2; seq++) history.put(packet(seq & 0xffff));
    expect(history.get(65_535)?.header.sequenceNumber).toBe(65_535);
    expect(history.get(1)?.header.sequenceNumber).toBe(1);
    expect(history.get(65_530)?.header.sequenceNumber).toBe(65_530);
    // An unknown number, and one whose slot now holds a newer packet, are not answered.
    expect(history.get(2)).toBeUndefined();
    history.put(packet(65_538 & 0xffff));
    expect(history.get(65_530)).toBeUndefined();
    // werift's NACK parser can hand over 65536 for 0.
    history.put(packet(0));
    expect(history.get(65_536)?.header.sequenceNumber).toBe(0);
  });

  it('refuses a size that is not a power of two, and forgets everything on clear', () => {
    expect(() => new SendHistory(1_000)).toThrow(/power of two/);
    const history = new SendHistory(4);
    history.put(packet(3));
    history.clear();
    expect(history.get(3)).toBeUndefined();
  });

  it(`resends one packet at most ${MAX_RESENDS_PER_PACKET} times, and a new packet in its slot starts afresh`, () => {
    const history = new SendHistory(4);
    history.put(packet(1));
    const taken = Array.from({ length: MAX_RESENDS_PER_PACKET + 2 }, () => history.takeForResend(1));
    expect(taken.filter((t) => t === 'spent')).toHaveLength(2);
    expect(taken.slice(0, MAX_RESENDS_PER_PACKET).every((t) => typeof t === 'object')).toBe(true);
    expect(history.takeForResend(2)).toBe('gone');
    history.put(packet(5));
    expect(typeof history.takeForResend(5)).toBe('object');
  });
});
