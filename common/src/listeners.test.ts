import { describe, expect, it } from 'vitest';
import { Listeners } from './listeners';

type Events = { ping: [number]; pong: [string, boolean] };

describe('Listeners', () => {
  it('calls every listener of an event in order, with its arguments', () => {
    const seen: string[] = [];
    const events = new Listeners<Events>(() => undefined);
    events.on('ping', (n) => seen.push(`a${n}`));
    events.on('ping', (n) => seen.push(`b${n}`));
    events.on('pong', (s, b) => seen.push(`pong ${s} ${b}`));
    events.emit('ping', 1);
    events.emit('pong', 'x', true);
    expect(seen).toEqual(['a1', 'b1', 'pong x true']);
  });

  it('a throwing listener is reported and does not stop the listeners after it', () => {
    const errors: [string, unknown][] = [];
    const seen: number[] = [];
    const events = new Listeners<Events>((event, err) => errors.push([String(event), err]));
    const boom = new Error('boom');
    events.on('ping', () => {
      throw boom;
    });
    events.on('ping', (n) => seen.push(n));
    expect(() => events.emit('ping', 7)).not.toThrow();
    expect(seen).toEqual([7]);
    expect(errors).toEqual([['ping', boom]]);
  });

  it('unsubscribes, and a listener added during an emit waits for the next one', () => {
    const seen: string[] = [];
    const events = new Listeners<Events>(() => undefined);
    const off = events.on('ping', () => {
      seen.push('first');
      events.on('ping', () => seen.push('late'));
    });
    events.emit('ping', 1);
    off();
    events.emit('ping', 2);
    expect(seen).toEqual(['first', 'late']);
  });

  it('clear() drops every listener', () => {
    let calls = 0;
    const events = new Listeners<Events>(() => undefined);
    events.on('ping', () => (calls += 1));
    events.clear();
    events.emit('ping', 1);
    expect(calls).toBe(0);
  });
});
