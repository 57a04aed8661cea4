import { describe, expect, it } from 'vitest';
import { KeyframeRequester } from './keyframe-requester';
import { ManualClock } from '@pixelfleet/common';


describe('KeyframeRequester', () => {
  it('sends at once, then at most once per interval, with one trailing request for a burst (no keyframe awaited)', () => {
    const clock = new ManualClock(1_000);
    const sent: number[] = [];
    const requester = new KeyframeRequester(() => sent.push(clock.now()) > 0, 500, clock, 0);
    requester.request();
    expect(sent).toEqual([1_000]);
    clock.advance(100);
    requester.request();
    requester.request();
    requester.request();
    expect(sent).toEqual([1_000]);
    clock.advance(399);
    expect(sent).toEqual([1_000]);
    clock.advance(1);
    expect(sent).toEqual([1_000, 1_500]);
    clock.advance(600);
    requester.request();
    expect(sent).toEqual([1_000, 1_500, 2_100]);
  });

  it('drops a pending request on close and ignores later ones', () => {
    const clock = new ManualClock(1_000);
    let sent = 0;
    const requester = new KeyframeRequester(() => ++sent > 0, 500, clock, 0);
    requester.request();
    requester.request();
    expect(clock.pending).toBe(1);
    requester.close();
    expect(clock.pending).toBe(0);
    clock.advance(1_000);
    requester.request();
    expect(sent).toBe(1);
  });

  it('does not ask again while a keyframe it asked for is still arriving; asks again once it arrived', () => {
    const clock = new ManualClock(1_000);
    const sent: number[] = [];
    const requester = new KeyframeRequester(() => sent.push(clock.now()) > 0, 500, clock, 1_000);
    requester.request();
    clock.advance(600);
    // Past the interval, but the keyframe is still on its way: folded into it, nothing trails.
    requester.request();
    requester.request();
    expect(sent).toEqual([1_000]);
    expect(clock.pending).toBe(0);
    requester.keyframeArrived();
    requester.request();
    expect(sent).toEqual([1_000, 1_600]);
    expect(requester.stats()).toEqual({ requested: 4, sent: 2, coalesced: 2 });
  });

  it('asks again after the await time when the app never sends the keyframe', () => {
    const clock = new ManualClock(1_000);
    const sent: number[] = [];
    const requester = new KeyframeRequester(() => sent.push(clock.now()) > 0, 500, clock, 1_000);
    requester.request();
    clock.advance(999);
    requester.request();
    expect(sent).toEqual([1_000]);
    clock.advance(1);
    requester.request();
    expect(sent).toEqual([1_000, 2_000]);
  });

  it('a trailing request is dropped when the keyframe is already on its way', () => {
    const clock = new ManualClock(1_000);
    const sent: number[] = [];
    const requester = new KeyframeRequester(() => sent.push(clock.now()) > 0, 500, clock, 400);
    requester.request(); // sent at 1000, awaited until 1400
    clock.advance(450); // no longer awaited
    requester.request(); // inside the interval: trails to 1500
    expect(clock.pending).toBe(1);
    clock.advance(50);
    expect(sent).toEqual([1_000, 1_500]);
  });

  it('a request that could not be sent (no ingest yet) is not awaited', () => {
    const clock = new ManualClock(1_000);
    let ingest = false;
    let sent = 0;
    const requester = new KeyframeRequester(() => ingest && ++sent > 0, 500, clock, 1_000);
    requester.request();
    expect(sent).toBe(0);
    ingest = true;
    clock.advance(500);
    requester.request();
    expect(sent).toBe(1);
    expect(requester.stats()).toEqual({ requested: 2, sent: 1, coalesced: 0 });
  });

  it('a request a keyframe already arriving cannot serve (a viewer that came up in its middle) waits only for the interval', () => {
    const clock = new ManualClock(1_000);
    const sent: number[] = [];
    const requester = new KeyframeRequester(() => sent.push(clock.now()) > 0, 500, clock, 1_000);
    requester.request(); // the join request: sent at 1000, its keyframe starts arriving
    clock.advance(300);
    requester.request(false); // media up mid-keyframe: trails to the end of the interval
    expect(clock.pending).toBe(1);
    clock.advance(200);
    expect(sent).toEqual([1_000, 1_500]);
    // Ordinary requests still fold into the keyframe now on its way.
    clock.advance(600);
    requester.request();
    expect(sent).toEqual([1_000, 1_500]);
  });
});
