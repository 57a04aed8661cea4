import { describe, expect, it } from 'vitest';
import { KeyedSerial } from './keyed-serial';

/** A promise settled from outside. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

/** Resolves once every queued microtask has run. */
const drained = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('KeyedSerial', () => {
  it('runs one key’s tasks one at a time, in the order asked', async () => {
    const serial = new KeyedSerial();
    const seen: string[] = [];
    const first = gate();
    const a = serial.run('s1', async () => {
      seen.push('a starts');
      await first.promise;
      seen.push('a ends');
      return 'a';
    });
    const b = serial.run('s1', () => {
      seen.push('b runs');
      return 'b';
    });
    await Promise.resolve();
    expect(seen).toEqual(['a starts']);
    first.open();
    expect(await Promise.all([a, b])).toEqual(['a', 'b']);
    expect(seen).toEqual(['a starts', 'a ends', 'b runs']);
  });

  it('lets other keys run meanwhile', async () => {
    const serial = new KeyedSerial();
    const held = gate();
    const slow = serial.run('s1', () => held.promise);
    expect(await serial.run('s2', () => 'other')).toBe('other');
    await drained();
    expect(serial.activeKeys).toBe(1);
    held.open();
    await slow;
  });

  it('gives a failure to its caller alone: the next task runs, and a synchronous throw rejects', async () => {
    const serial = new KeyedSerial();
    const failing = serial.run('s1', () => {
      throw new Error('refused');
    });
    const next = serial.run('s1', () => 'after');
    await expect(failing).rejects.toThrow('refused');
    expect(await next).toBe('after');
  });

  it('forgets a key once its work has settled', async () => {
    const serial = new KeyedSerial();
    await serial.run('s1', () => 1);
    await drained();
    expect(serial.activeKeys).toBe(0);
  });
});
