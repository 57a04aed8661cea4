import { describe, expect, it } from 'vitest';
import { IngestLossTracker, type IngestLossOptions } from './ingest-loss';
import { ManualClock } from '@pixelfleet/common';


const options: IngestLossOptions = { retryMs: 30, maxNacks: 3, maxMissing: 100, maxGap: 3_000 };

function tracker() {
  const clock = new ManualClock(0);
  const nacks: number[][] = [];
  const abandoned: number[] = [];
  const loss = new IngestLossTracker({ nack: (s) => nacks.push(s), abandoned: (n) => abandoned.push(n) }, clock, options);
  return { clock, nacks, abandoned, loss };
}

describe('IngestLossTracker', () => {
  it('NACKs a gap at once, and nothing for an unbroken or reordered stream', () => {
    const { loss, nacks } = tracker();
    for (const seq of [10, 11, 12, 14, 13, 15]) loss.received(seq);
    expect(nacks).toEqual([[13]]);
    expect(loss.stats()).toEqual({ packetsMissing: 1, nacksSent: 1, packetsRecovered: 1, packetsAbandoned: 0 });
    expect(loss.pending).toBe(0);
  });

  it('retries every retryMs until the packet arrives', () => {
    const { loss, nacks, clock } = tracker();
    loss.received(100);
    loss.received(103);
    expect(nacks).toEqual([[101, 102]]);
    clock.advance(29);
    expect(nacks).toHaveLength(1);
    clock.advance(1);
    expect(nacks).toEqual([[101, 102], [101, 102]]);
    loss.received(101);
    clock.advance(30);
    expect(nacks.at(-1)).toEqual([102]);
    loss.received(102);
    clock.advance(100);
    expect(nacks).toHaveLength(3);
    expect(clock.pending).toBe(0);
  });

  it('gives a packet up after maxNacks and reports it once', () => {
    const { loss, nacks, abandoned, clock } = tracker();
    loss.received(1);
    loss.received(3);
    clock.advance(1_000);
    expect(nacks).toEqual([[2], [2], [2]]);
    expect(abandoned).toEqual([1]);
    expect(loss.stats().packetsAbandoned).toBe(1);
    expect(clock.pending).toBe(0);
  });

  it('detects loss across the 16-bit sequence number wrap', () => {
    const { loss, nacks } = tracker();
    loss.received(65_533);
    loss.received(65_534);
    loss.received(1);
    expect(nacks).toEqual([[65_535, 0]]);
    loss.received(0);
    loss.received(65_535);
    loss.received(2);
    expect(loss.stats()).toMatchObject({ packetsMissing: 2, packetsRecovered: 2 });
  });

  it('a jump larger than maxGap is a new origin, not thousands of lost packets', () => {
    const { loss, nacks, abandoned } = tracker();
    loss.received(10);
    loss.received(12);
    loss.received(40_000);
    loss.received(40_001);
    expect(nacks).toEqual([[11]]);
    expect(abandoned).toEqual([1]);
    expect(loss.pending).toBe(0);
  });

  it('keeps at most maxMissing packets, giving up the oldest', () => {
    const { loss, abandoned } = tracker();
    loss.received(0);
    loss.received(150);
    expect(loss.pending).toBe(100);
    expect(abandoned).toEqual([49]);
  });

  it('does nothing after close', () => {
    const { loss, nacks, clock } = tracker();
    loss.received(1);
    loss.received(5);
    loss.close();
    expect(clock.pending).toBe(0);
    loss.received(9);
    expect(nacks).toHaveLength(1);
  });
});
