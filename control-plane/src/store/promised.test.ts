import { describe, expect, it } from 'vitest';
import { promised, type Sync } from './promised';

interface Counter {
  add(by: number): Promise<number>;
  failIf(fail: boolean): Promise<string>;
  name(): Promise<string>;
}

class Base {
  name(): string {
    return 'base';
  }
}

class SyncCounter extends Base implements Sync<Counter> {
  private total = 0;
  add(by: number): number {
    this.total += by;
    return this.total;
  }
  failIf(fail: boolean): string {
    if (fail) throw new Error('refused');
    return 'ok';
  }
}

describe('promised', () => {
  it('answers each method with a promise of what the synchronous one returned, on the same instance', async () => {
    const counter = new SyncCounter();
    const repository = promised<Counter>(counter);
    const first = repository.add(2);
    expect(first).toBeInstanceOf(Promise);
    expect(await first).toBe(2);
    expect(await repository.add(3)).toBe(5);
    expect(counter.add(0)).toBe(5);
  });

  it('turns a throw into a rejection, never a synchronous throw', async () => {
    const repository = promised<Counter>(new SyncCounter());
    let answer: Promise<string> | undefined;
    expect(() => (answer = repository.failIf(true))).not.toThrow();
    await expect(answer).rejects.toThrow('refused');
    expect(await repository.failIf(false)).toBe('ok');
  });

  it('includes inherited methods', async () => {
    expect(await promised<Counter>(new SyncCounter()).name()).toBe('base');
  });
});
