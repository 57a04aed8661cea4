import { describe, expect, it } from 'vitest';
import { signallingUrl, telemetryEndpoint, type PageLocation } from './page-location';

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
