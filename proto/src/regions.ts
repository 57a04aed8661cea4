// The three regions a project can live in and a worker enrolls in, by wire code (the agent's
// `region`, the Hello's, the API's), with the display name that session snapshots carry in
// data.region (the spec shows europe as `Europe`). The one table: the control plane and the agent
// both read it from here. (The projects table's CHECK in the first migration lists them too: a
// migration once shipped is never edited.)

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
