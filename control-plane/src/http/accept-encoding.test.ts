// Which Accept-Encoding values take gzip (RFC 9110 §12.5.3): by name or `*`, unless weighted q=0.
import { describe, expect, it } from 'vitest';
import { acceptsGzip } from './accept-encoding';

describe('acceptsGzip', () => {
  it('reads the header as browsers and tools send it', () => {
    expect(acceptsGzip('gzip, deflate, br, zstd')).toBe(true); // Chromium
    expect(acceptsGzip('GZIP;q=0.5')).toBe(true);
    expect(acceptsGzip('*')).toBe(true);
    expect(acceptsGzip('br, *;q=0.1')).toBe(true);
    expect(acceptsGzip(undefined)).toBe(false); // curl without --compressed
    expect(acceptsGzip('identity')).toBe(false);
    expect(acceptsGzip('br, deflate')).toBe(false);
    expect(acceptsGzip('gzip;q=0, br')).toBe(false);
    expect(acceptsGzip('x-gzip')).toBe(true); // gzip's alias (RFC 9110 §8.4.1.3)
    expect(acceptsGzip('gzip;q=0, *')).toBe(false); // named and refused: the star does not take it back
    expect(acceptsGzip('*;q=0')).toBe(false);
    expect(acceptsGzip('gzip;q=zero')).toBe(false);
    expect(acceptsGzip('br;q=1.0, gzip;q=0.8')).toBe(true);
    expect(acceptsGzip('*, gzip;q=0')).toBe(false);
  });
});
