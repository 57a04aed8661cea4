import { describe, expect, it } from 'vitest';
import { waitInWords } from './view';

describe('waitInWords', () => {
  it('says the estimated wait in whole minutes, rounded up, and under a minute as such', () => {
    expect(waitInWords(0)).toBe('less than a minute');
    expect(waitInWords(59)).toBe('less than a minute');
    expect(waitInWords(60)).toBe('about 1 minute');
    expect(waitInWords(61)).toBe('about 2 minutes');
    expect(waitInWords(250)).toBe('about 5 minutes');
  });
});
