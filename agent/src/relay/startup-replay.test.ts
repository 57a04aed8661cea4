import { describe, expect, it } from 'vitest';
import { StartupReplay } from './startup-replay';

const msg = (...bytes: number[]): Buffer => Buffer.from(bytes);

describe('StartupReplay', () => {
  it('keeps the last two Protocol (255) and the last InitialSettings (7) messages, in arrival order', () => {
    const replay = new StartupReplay();
    for (const m of [msg(255, 1), msg(255, 2), msg(7, 1), msg(1, 9), msg(255, 3), msg(7, 2), msg(0, 1)]) replay.record(m);
    expect(replay.snapshot()).toEqual([msg(255, 2), msg(255, 3), msg(7, 2)]);
  });

  it('copies what it keeps, skips text and oversized messages, and clears', () => {
    const replay = new StartupReplay(4);
    const original = msg(7, 1, 2);
    replay.record(original);
    original[1] = 99;
    replay.record(msg(255, 1, 2, 3, 4));
    replay.record('\u00ff text');
    expect(replay.snapshot()).toEqual([msg(7, 1, 2)]);
    replay.clear();
    expect(replay.snapshot()).toEqual([]);
  });
});
