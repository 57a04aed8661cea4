// Byte counts as a customer reads them in an objection ("12.3 GiB", or "24 GiB" in a download's words).

const UNITS = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/** `bytes` in the largest binary unit that keeps it at least 1, one decimal past bytes. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${bytes} bytes` : `${value.toFixed(1)} ${UNITS[unit]}`;
}

/** formatBytes without a trailing `.0` ("24 GiB", "1.5 MiB"): the sizes in a download's words. */
export function byteWords(bytes: number): string {
  return formatBytes(bytes).replace('.0 ', ' ');
}
