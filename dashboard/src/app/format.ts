// Numbers and times as people read them: dates in the viewer's own time zone and language,
// bytes in binary units, durations in the largest unit that fits.

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'medium' });

/** An instant (epoch ms) in the viewer's time zone. */
export function formatTime(ms: number): string {
  return dateTime.format(new Date(ms));
}

/** An instant as the machine-readable value of a <time> element. */
export function isoTime(ms: number): string {
  return new Date(ms).toISOString();
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];

export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 2 : 1)} ${UNITS[unit]}`;
}

/** A span of seconds: `45 s`, `3 min 20 s`, `2 h 5 min`. */
export function formatSeconds(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 === 0 ? '' : ` ${s % 60} s`}`;
  return `${Math.floor(s / 3600)} h${Math.floor((s % 3600) / 60) === 0 ? '' : ` ${Math.floor((s % 3600) / 60)} min`}`;
}

/** A duration in ms as people read it, or a dash when there is none yet. */
export function formatMs(ms: number | null): string {
  if (ms === null) return '—';
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  return formatSeconds(ms / 1000);
}
