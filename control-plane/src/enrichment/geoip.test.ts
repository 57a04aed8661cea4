// The bundled DB-IP city database, read for real (the npm package's files).
import { beforeAll, describe, expect, it } from 'vitest';
import { countryName, loadDbIpCity, type GeoIp } from './geoip';

let geo: GeoIp;
beforeAll(async () => {
  geo = await loadDbIpCity();
});

describe('DB-IP city lookups', () => {
  it('finds the country (English name, ISO code) and city of public IPv4 and IPv6 addresses', () => {
    expect(geo.lookup('81.2.69.142')).toEqual({ country: 'United Kingdom', countryCode: 'GB', city: 'London' });
    expect(geo.lookup('2a00:1450:4001:80b::200e')).toEqual({ country: 'Germany', countryCode: 'DE', city: 'Frankfurt am Main' });
    expect(geo.lookup('2001:240::1')).toMatchObject({ country: 'Japan', countryCode: 'JP' });
  });

  it('reads an IPv4 peer of a dual-stack socket (::ffff:a.b.c.d) as IPv4', () => {
    expect(geo.lookup('::ffff:81.2.69.142')).toEqual(geo.lookup('81.2.69.142'));
  });

  it('gives nothing for private, loopback, link-local, documentation and malformed addresses', () => {
    for (const address of ['10.1.2.3', '192.168.0.10', '172.16.5.4', '127.0.0.1', '::1', 'fe80::1', 'fd00::1', '203.0.113.5', '::ffff:127.0.0.1', 'not-an-ip', '']) {
      expect(geo.lookup(address), address).toEqual({});
    }
  });

  it('is loaded once per process', async () => {
    expect(await loadDbIpCity()).toBe(geo);
  });

  it('names countries in English from their code', () => {
    expect(countryName('DE')).toBe('Germany');
    expect(countryName('US')).toBe('United States');
  });
});
