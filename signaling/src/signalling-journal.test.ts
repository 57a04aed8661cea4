import { describe, expect, it } from 'vitest';
import { JOURNAL_MAX_BYTES, JOURNAL_MAX_FRAMES, SignallingJournal } from './signalling-journal';

const frame = (n: number) => JSON.stringify({ type: 'iceCandidate', n });

describe('SignallingJournal', () => {
  it('counts frames read and written, and gives back what a page that read some of them missed, in order', () => {
    const journal = new SignallingJournal();
    for (let n = 0; n < 5; n++) journal.recordSent(frame(n));
    journal.recordReceived();
    journal.recordReceived();
    expect([journal.sent, journal.received]).toEqual([5, 2]);
    expect(journal.since(3)).toEqual({ frames: [frame(3), frame(4)], missed: 0 });
    expect(journal.since(5)).toEqual({ frames: [], missed: 0 });
    expect(journal.since(0)?.frames).toHaveLength(5);
  });

  it('refuses a count it cannot have given: more than it sent, negative, or not an integer', () => {
    const journal = new SignallingJournal();
    journal.recordSent(frame(0));
    for (const count of [2, -1, 0.5, Number.NaN, Number.MAX_SAFE_INTEGER + 1]) expect(journal.since(count)).toBeUndefined();
    expect(new SignallingJournal().since(0)).toEqual({ frames: [], missed: 0 });
  });

  it(`keeps the last ${JOURNAL_MAX_FRAMES} frames; a page further behind gets those and the number it missed`, () => {
    const journal = new SignallingJournal();
    const total = JOURNAL_MAX_FRAMES + 10;
    for (let n = 0; n < total; n++) journal.recordSent(frame(n));
    const replay = journal.since(4)!;
    expect(replay.missed).toBe(6);
    expect(replay.frames).toHaveLength(JOURNAL_MAX_FRAMES);
    expect(replay.frames[0]).toBe(frame(10));
    expect(replay.frames.at(-1)).toBe(frame(total - 1));
  });

  it(`keeps at most ${JOURNAL_MAX_BYTES / 1024} KiB of frames, but always the last one`, () => {
    const journal = new SignallingJournal();
    const offer = (n: number) => JSON.stringify({ type: 'offer', n, sdp: 'a'.repeat(30 * 1024) });
    for (let n = 0; n < 6; n++) journal.recordSent(offer(n));
    const replay = journal.since(0)!;
    expect(replay.frames.reduce((sum, f) => sum + f.length, 0)).toBeLessThanOrEqual(JOURNAL_MAX_BYTES);
    expect(replay.frames.at(-1)).toBe(offer(5));
    expect(replay.missed + replay.frames.length).toBe(6);

    const huge = new SignallingJournal();
    huge.recordSent(JSON.stringify({ type: 'offer', sdp: 'a'.repeat(JOURNAL_MAX_BYTES) }));
    expect(huge.since(0)?.frames).toHaveLength(1);
  });
});
