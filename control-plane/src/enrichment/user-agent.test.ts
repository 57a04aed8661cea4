import { describe, expect, it } from 'vitest';
import { MAX_USER_AGENT_CHARS, userAgentDimensions } from './user-agent';

describe('userAgentDimensions', () => {
  it.each([
    [
      'Chrome on Windows',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      { browser: 'Chrome', os: 'Windows', deviceType: 'desktop' },
    ],
    [
      'Safari on an iPhone',
      'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1',
      { browser: 'Mobile Safari', os: 'iOS', deviceType: 'mobile' },
    ],
    ['Firefox on Linux', 'Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0', { browser: 'Firefox', os: 'Linux', deviceType: 'desktop' }],
    [
      'Chrome on an Android tablet (Galaxy Tab A8)',
      'Mozilla/5.0 (Linux; Android 13; SM-X200) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36',
      { browser: 'Chrome', os: 'Android', deviceType: 'tablet' },
    ],
    [
      'Edge on Windows (not Chrome)',
      'Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36 Edg/131.0.0.0',
      { browser: 'Edge', os: 'Windows', deviceType: 'desktop' },
    ],
  ])('%s', (_name, ua, expected) => {
    expect(userAgentDimensions(ua)).toEqual(expected);
  });

  it('gives nothing for a bot, a tool, garbage or no User-Agent (those sessions count in no browser, os or device)', () => {
    expect(userAgentDimensions('Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)')).toEqual({});
    expect(userAgentDimensions('curl/8.5.0')).toEqual({});
    expect(userAgentDimensions('%%% not a user agent ###')).toEqual({});
    expect(userAgentDimensions('   ')).toEqual({});
    expect(userAgentDimensions(undefined)).toEqual({});
  });

  it(`reads only the first ${MAX_USER_AGENT_CHARS} characters of a huge User-Agent`, () => {
    const ua = `Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0 ${'x'.repeat(100_000)}`;
    const started = performance.now();
    expect(userAgentDimensions(ua)).toEqual({ browser: 'Firefox', os: 'Linux', deviceType: 'desktop' });
    expect(performance.now() - started).toBeLessThan(50);
  });
});
