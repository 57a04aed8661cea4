// Frame pacing on a fake clock, and a player's feed of the looping clip: start at a keyframe,
// continuous timestamps across loops, keyframe on PLI/IFrameRequest and after skipped frames.
import { describe, expect, it } from 'vitest';
import type { RtpPacket } from 'werift';
import { ClipVideoFeed } from './clip-video-feed';
import { FrameClock, type FrameTick, type TimerHost } from './frame-clock';
import { loadClip } from './h264-clip';

/** A manual clock: advance(ms) runs due timers in time order. */
class FakeTimers implements TimerHost {
  time = 0;
  private timers: { at: number; callback: () => void; id: number }[] = [];
  private nextId = 0;
  now(): number {
    return this.time;
  }
  setTimeout(callback: () => void, delayMs: number): unknown {
    const id = this.nextId++;
    this.timers.push({ at: this.time + delayMs, callback, id });
    return id;
  }
  clearTimeout(handle: unknown): void {
    this.timers = this.timers.filter((t) => t.id !== handle);
  }
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      const due = this.timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (due === undefined) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = Math.max(this.time, due.at);
      due.callback();
    }
    this.time = end;
  }
  /** Simulates a blocked event loop: time passes, no timer runs. */
  stall(ms: number): void {
    this.time += ms;
  }
}

describe('FrameClock', () => {
  it('emits frame n at start + n/fps with no drift over a long run', () => {
    const timers = new FakeTimers();
    const ticks: { index: number; at: number }[] = [];
    const clock = new FrameClock({ fps: 30, timers }, (tick) => ticks.push({ index: tick.index, at: timers.time }));
    clock.start();
    timers.advance(60_001); // frame 1800 is due at 60 000 ms plus float rounding
    expect(ticks.length).toBe(1801); // frames 0..1800 inclusive
    expect(ticks.map((t) => t.index)).toEqual([...Array(1801).keys()]);
    for (const t of ticks) {
      // Never early, and never later than the 1 ms rounding of the timer.
      expect(t.at - (t.index * 1000) / 30).toBeGreaterThanOrEqual(0);
      expect(t.at - (t.index * 1000) / 30).toBeLessThanOrEqual(1);
    }
    clock.stop();
    timers.advance(1000);
    expect(ticks.length).toBe(1801);
  });

  it('catches up after a short stall and skips ahead, flagged, after a long one', () => {
    const timers = new FakeTimers();
    const ticks: FrameTick[] = [];
    const clock = new FrameClock({ fps: 30, timers }, (tick) => ticks.push(tick));
    clock.start();
    timers.advance(100); // frames 0..3
    timers.stall(200); // 6 more frames due: below the 1 s limit, so they are all emitted
    timers.advance(1);
    expect(ticks.map((t) => t.index)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(ticks.some((t) => t.skipped)).toBe(false);
    ticks.length = 0;
    timers.stall(5000);
    timers.advance(1);
    expect(ticks[0]).toEqual({ index: 159, skipped: true });
    expect(ticks.length).toBe(1);
    clock.stop();
  });
});

describe('ClipVideoFeed', () => {
  const clip = loadClip();

  /** A feed with deterministic randomness and a controllable now(); records packets per tick. */
  const setup = (): { feed: ClipVideoFeed; tick: (index: number, skipped?: boolean) => RtpPacket[] } => {
    let now = 0;
    let current: RtpPacket[] = [];
    const feed = new ClipVideoFeed(clip, (p) => current.push(p), { random: () => 0.5, now: () => now });
    const tick = (index: number, skipped = false): RtpPacket[] => {
      current = [];
      feed.onTick({ index, skipped });
      now += 1000 / 30;
      return current;
    };
    return { feed, tick };
  };
  const isKeyframe = (packets: RtpPacket[]): boolean => {
    const first = packets[0]?.payload;
    if (first === undefined) return false;
    // STAP-A carrying SPS first, or an SPS on its own.
    return ((first[0] ?? 0) & 0x1f) === 24 ? ((first[3] ?? 0) & 0x1f) === 7 : ((first[0] ?? 0) & 0x1f) === 7;
  };

  it('sends nothing until activated, then starts with a keyframe', () => {
    const { feed, tick } = setup();
    expect(tick(0)).toEqual([]);
    feed.activate();
    expect(isKeyframe(tick(1))).toBe(true);
    expect(isKeyframe(tick(2))).toBe(false);
  });

  it('keeps timestamps increasing by 3000 per frame and sequence numbers consecutive across clip loops', () => {
    const { feed, tick } = setup();
    feed.activate();
    const all: RtpPacket[][] = [];
    for (let i = 0; i < 200; i++) all.push(tick(i)); // more than two loops of 90 frames
    const stamps = all.map((packets) => packets[0]?.header.timestamp ?? -1);
    for (let i = 1; i < stamps.length; i++) expect(((stamps[i] ?? 0) - (stamps[i - 1] ?? 0) + 2 ** 32) % 2 ** 32).toBe(3000);
    const seqs = all.flat().map((p) => p.header.sequenceNumber);
    for (let i = 1; i < seqs.length; i++) expect(seqs[i]).toBe(((seqs[i - 1] ?? 0) + 1) & 0xffff);
    expect(all.map(isKeyframe).flatMap((k, i) => (k ? [i] : []))).toEqual([0, 15, 30, 45, 60, 75, 90, 105, 120, 135, 150, 165, 180, 195]);
    expect(feed.stats.framesSent).toBe(200);
  });

  it('jumps to the next keyframe on request, even right after the opening one, and ignores a second request within 300 ms', () => {
    const { feed, tick } = setup();
    feed.activate();
    tick(0);
    expect(feed.requestKeyframe()).toBe(true); // the opening keyframe went out 33 ms ago, but nobody asked for it (libwebrtc honours this)
    expect(feed.requestKeyframe()).toBe(false); // already pending
    const next = tick(1);
    expect(isKeyframe(next)).toBe(true);
    expect(next[0]?.header.timestamp).toBe(((0.5 * 2 ** 32) + 3_000) % 2 ** 32); // timestamp follows the tick, not the clip
    for (let i = 2; i <= 8; i++) tick(i); // ticks are 33⅓ ms apart
    expect(feed.requestKeyframe()).toBe(false); // 267 ms after the honoured request
    expect(isKeyframe(tick(9))).toBe(false);
    tick(10);
    expect(feed.requestKeyframe()).toBe(true); // 333 ms after it
    expect(isKeyframe(tick(11))).toBe(true);
    expect(feed.stats).toMatchObject({ keyframeRequestsHonoured: 2, keyframeRequestsIgnored: 2 });
  });

  it('restarts from a keyframe after skipped frames', () => {
    const { feed, tick } = setup();
    feed.activate();
    for (let i = 0; i < 5; i++) tick(i);
    expect(isKeyframe(tick(40, true))).toBe(true);
  });
});
