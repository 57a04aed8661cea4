import { describe, expect, it } from 'vitest';
import { renderFields, renderTable } from './table';

describe('renderTable', () => {
  it('left-aligns columns two spaces apart, sized to the widest cell or header', () => {
    const out = renderTable(
      ['ID', 'STATUS', 'REGION'],
      [
        ['wrk_1', 'connected', 'europe'],
        ['wrk_long_id', 'draining', 'us-east-1'],
      ],
    );
    expect(out).toBe(
      ['ID           STATUS     REGION', 'wrk_1        connected  europe', 'wrk_long_id  draining   us-east-1', ''].join('\n'),
    );
  });

  it('does not pad the last column, and trims trailing blanks', () => {
    const out = renderTable(['A', 'B'], [['x', ''], ['yy', 'z']]);
    expect(out).toBe('A   B\nx\nyy  z\n');
    for (const line of out.split('\n')) expect(line).toBe(line.trimEnd());
  });

  it('renders "(none)" under the header when there are no rows', () => {
    expect(renderTable(['ID', 'STATUS'], [])).toBe('ID  STATUS\n(none)\n');
  });

  it('treats missing cells as empty', () => {
    expect(renderTable(['A', 'B', 'C'], [['1'], ['22', '3', '4']])).toBe('A   B  C\n1\n22  3  4\n');
  });

  it('ends with exactly one newline', () => {
    const out = renderTable(['X'], [['1'], ['2']]);
    expect(out).toBe('X\n1\n2\n');
  });
});

describe('renderFields', () => {
  it('renders key/value lines with keys padded to the longest', () => {
    expect(renderFields({ workerId: 'wrk_1', slots: 4, draining: false })).toBe('workerId  wrk_1\nslots     4\ndraining  false\n');
  });

  it('keeps field order and renders a single field', () => {
    expect(renderFields({ apiKey: 'pfk_x' })).toBe('apiKey  pfk_x\n');
    expect(renderFields({ b: 1, a: 2 })).toBe('b  1\na  2\n');
  });
});
