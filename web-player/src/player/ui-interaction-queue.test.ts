import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { UiInteractionData } from '../embed-messages';
import { UiInteractionQueue } from './ui-interaction-queue';

describe('UiInteractionQueue', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('sends at once when the app can take it', () => {
    const sent: UiInteractionData[] = [];
    const queue = new UiInteractionQueue({ send: (data) => (sent.push(data), true) });
    queue.enqueue({ a: 1 });
    expect(sent).toEqual([{ a: 1 }]);
    expect(queue.size).toBe(0);
  });

  it('holds messages while emitUIInteraction returns false and retries them in order', () => {
    let ready = false;
    const sent: UiInteractionData[] = [];
    const send = vi.fn((data: UiInteractionData) => {
      if (!ready) return false;
      sent.push(data);
      return true;
    });
    const queue = new UiInteractionQueue({ send, retryMs: 250 });
    queue.enqueue('first');
    queue.enqueue({ second: true });
    expect(queue.size).toBe(2);
    vi.advanceTimersByTime(1_000);
    expect(send).toHaveBeenCalledTimes(6); // one try per enqueue, then one per 250 ms, always the head first
    ready = true;
    vi.advanceTimersByTime(250);
    expect(sent).toEqual(['first', { second: true }]);
    expect(queue.size).toBe(0);
    expect(vi.getTimerCount()).toBe(0);
  });

  it('drains at once when told the video started', () => {
    let ready = false;
    const sent: UiInteractionData[] = [];
    const queue = new UiInteractionQueue({ send: (data) => ready && (sent.push(data), true) });
    queue.enqueue('x');
    ready = true;
    queue.drain();
    expect(sent).toEqual(['x']);
  });

  it('keeps only the newest messages beyond its capacity', () => {
    let ready = false;
    const sent: UiInteractionData[] = [];
    const queue = new UiInteractionQueue({ send: (data) => ready && (sent.push(data), true), capacity: 2 });
    queue.enqueue('1');
    queue.enqueue('2');
    queue.enqueue('3');
    ready = true;
    queue.drain();
    expect(sent).toEqual(['2', '3']);
  });

  it('drops everything and stops retrying when closed', () => {
    const send = vi.fn(() => false);
    const queue = new UiInteractionQueue({ send });
    queue.enqueue('x');
    queue.close();
    queue.enqueue('y');
    vi.advanceTimersByTime(10_000);
    expect(send).toHaveBeenCalledTimes(1);
    expect(queue.size).toBe(0);
  });
});
