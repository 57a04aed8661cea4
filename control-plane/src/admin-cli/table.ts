// Plain-text tables for the admin CLI's human-readable output.

/** Renders rows as left-aligned columns under a header; empty rows render as "(none)". */
export function renderTable(columns: readonly string[], rows: readonly (readonly string[])[]): string {
  if (rows.length === 0) return `${columns.join('  ')}\n(none)\n`;
  const widths = columns.map((c, i) => Math.max(c.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((cell, i) => (i === cells.length - 1 ? cell : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  return [line(columns), ...rows.map(line)].join('\n') + '\n';
}

/** Renders an object's fields as `key  value` lines. */
export function renderFields(fields: Record<string, string | number | boolean>): string {
  const width = Math.max(...Object.keys(fields).map((k) => k.length));
  return Object.entries(fields).map(([k, v]) => `${k.padEnd(width)}  ${String(v)}`).join('\n') + '\n';
}
