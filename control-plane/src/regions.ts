// The three regions a project can live in, by wire code, with the display name that session
// snapshots carry in data.region (the spec shows europe as `Europe`).

export const REGIONS = {
  'us-east-1': 'North America',
  europe: 'Europe',
  'asia-pacific': 'Asia Pacific',
} as const;

export type RegionCode = keyof typeof REGIONS;

export const REGION_CODES = Object.keys(REGIONS) as RegionCode[];

export function isRegionCode(value: string): value is RegionCode {
  return Object.hasOwn(REGIONS, value);
}

export function regionDisplayName(code: RegionCode): string {
  return REGIONS[code];
}
