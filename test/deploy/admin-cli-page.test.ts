// docs/admin-cli.md's table is the admin command table as a reader sees it: one row per command
// (drain and undrain share one), each written as `pixelfleet admin <words> --help` shows it.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ADMIN_COMMANDS } from '@pixelfleet/control-plane/test-support';

const PAGE = new URL('../../docs/admin-cli.md', import.meta.url);

describe('docs/admin-cli.md', () => {
  it('lists every admin command with its own flags, and no other', () => {
    const documented = readFileSync(PAGE, 'utf8')
      .split('\n')
      .filter((line) => line.startsWith('| `'))
      .flatMap((line) => {
        // The first cell: one or more `command args` spans; `\|` is a | inside a cell.
        const cell = line.slice(2).split(/ (?<!\\)\| /)[0]!;
        return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!.replace(/\\\|/g, '|'));
      });
    const table = ADMIN_COMMANDS.map((c) => `${c.words.join(' ')} ${c.args}`.trimEnd());
    expect(documented).toEqual(table);
  });
});
