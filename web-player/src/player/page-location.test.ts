import { describe, expect, it } from 'vitest';
import { QUERY_PARAMETERS_LIMITS, queryParametersMessage, signallingUrl, telemetryEndpoint, type PageLocation } from './page-location';

function at(href: string): PageLocation {
  const url = new URL(href);
  return { protocol: url.protocol, host: url.host, pathname: url.pathname, href: url.href };
}

describe('page addresses', () => {
  it('opens the signalling socket beside the page, wss on https', () => {
    expect(signallingUrl(at('https://play.example/share/p1?x=1'))).toBe('wss://play.example/share/p1/signalling');
    expect(signallingUrl(at('http://127.0.0.1:8080/share/p1/'))).toBe('ws://127.0.0.1:8080/share/p1/signalling');
  });

  it('resolves the telemetry URL against the page and refuses other schemes', () => {
    expect(telemetryEndpoint('/api/v1/telemetry', at('https://play.example/share/p1'))).toBe('https://play.example/api/v1/telemetry');
    expect(telemetryEndpoint('https://stats.example/t', at('https://play.example/share/p1'))).toBe('https://stats.example/t');
    expect(() => telemetryEndpoint('javascript:alert(1)', at('https://play.example/share/p1'))).toThrow(TypeError);
  });
});

describe('queryParametersMessage', () => {
  it("hands the app the link's query parameters as one object, first value of a repeated name", () => {
    expect(queryParametersMessage('?level=forest&lang=de&level=desert&empty=')).toEqual({ pixelfleetQueryParameters: { level: 'forest', lang: 'de', empty: '' } });
    expect(queryParametersMessage('?name=J%C3%BCrgen+M')).toEqual({ pixelfleetQueryParameters: { name: 'Jürgen M' } });
  });

  it('sends nothing for a page without parameters', () => {
    expect(queryParametersMessage('')).toBeUndefined();
    expect(queryParametersMessage('?')).toBeUndefined();
  });

  it('leaves out what a crafted link could blow up: too many names, long names, long values', () => {
    const many = Array.from({ length: 40 }, (_, i) => `p${i}=${i}`).join('&');
    expect(Object.keys(queryParametersMessage(`?${many}`)!.pixelfleetQueryParameters)).toHaveLength(QUERY_PARAMETERS_LIMITS.count);
    const long = `?${'n'.repeat(QUERY_PARAMETERS_LIMITS.nameChars + 1)}=1&v=${'x'.repeat(QUERY_PARAMETERS_LIMITS.valueChars + 1)}&ok=1`;
    expect(queryParametersMessage(long)).toEqual({ pixelfleetQueryParameters: { ok: '1' } });
    expect(JSON.stringify(queryParametersMessage('?__proto__=x&constructor=y'))).toBe('{"pixelfleetQueryParameters":{"__proto__":"x","constructor":"y"}}');
  });
});
