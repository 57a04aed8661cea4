// For tests that compare a table in the code with the spec's: one section of the spec, read from
// ../shared/spec when it is beside the repository and otherwise from a committed copy, so the
// comparison always runs (CI clones do not carry ../shared) and the copy is checked whenever it can be.
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const SPEC_PATH = fileURLToPath(new URL('../../../../shared/spec/service-spec.md', import.meta.url));

export interface SpecSection {
  /** The section as the spec has it, or undefined when the spec is not beside the repository. */
  fromSpec: string | undefined;
  /** The committed copy of the section. */
  fromCopy: string;
  /** What tests compare against: the spec's text when present, else the copy. */
  text: string;
}

/**
 * The lines from the one starting with `start` up to (not including) the one starting with `end`;
 * throws when either is missing, so a renamed heading fails the test instead of emptying it.
 */
export function sectionOf(text: string, start: string, end: string): string {
  const lines = text.split('\n');
  const from = lines.findIndex((l) => l.startsWith(start));
  const to = from < 0 ? -1 : lines.findIndex((l, i) => i > from && l.startsWith(end));
  if (from < 0 || to < 0) throw new Error(`spec section ${JSON.stringify(start)} … ${JSON.stringify(end)} not found`);
  return `${lines.slice(from, to).join('\n').trimEnd()}\n`;
}

/** The section between `start` and `end` from the spec and from the committed copy at `copy`. */
export function specSection(copy: URL, start: string, end: string): SpecSection {
  const fromCopy = readFileSync(copy, 'utf8');
  const fromSpec = existsSync(SPEC_PATH) ? sectionOf(readFileSync(SPEC_PATH, 'utf8'), start, end) : undefined;
  return { fromSpec, fromCopy, text: fromSpec ?? fromCopy };
}

/** The body rows of the first markdown table in `text` (header and rule dropped), cells trimmed. */
export function markdownTableRows(text: string): string[][] {
  const table = text.split('\n').filter((l) => l.startsWith('|'));
  return table.slice(2).map((line) =>
    line
      .slice(1, line.endsWith('|') ? -1 : undefined)
      .split('|')
      .map((cell) => cell.trim()),
  );
}

/** The first table under the heading line starting with `heading` (up to the next heading). */
export function tableAfter(text: string, heading: string): string[][] {
  const lines = text.split('\n');
  const at = lines.findIndex((l) => l.startsWith(heading));
  if (at < 0) throw new Error(`heading ${JSON.stringify(heading)} not found`);
  const next = lines.findIndex((l, i) => i > at && l.startsWith('#'));
  return markdownTableRows(lines.slice(at + 1, next < 0 ? undefined : next).join('\n'));
}
