import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CommandJournal, JOURNAL_CAPACITY, type CommandOutcome } from './journal';

let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-journal-'));
});

afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

const ok = (seq: number): CommandOutcome => ({ seq, phase: 'SUCCEEDED', errorCode: '', errorMessage: '' });
const failed = (seq: number, code: string): CommandOutcome => ({ seq, phase: 'FAILED', errorCode: code, errorMessage: `${code} happened` });

describe('CommandJournal', () => {
  it('starts empty when there is no journal file', () => {
    const j = new CommandJournal(join(dir, 'not-yet-created'));
    expect(j.lastAckedSeq).toBe(0);
    expect(j.outcomeOf('cmd_1')).toBeUndefined();
  });

  it('remembers outcomes by command id', () => {
    const j = new CommandJournal(dir);
    j.record('cmd_1', ok(1));
    j.record('cmd_2', failed(2, 'STALE'));
    expect(j.outcomeOf('cmd_1')).toEqual(ok(1));
    expect(j.outcomeOf('cmd_2')).toEqual(failed(2, 'STALE'));
    expect(j.outcomeOf('cmd_3')).toBeUndefined();
  });

  it('persists across instances over the same data folder (a restart)', () => {
    const first = new CommandJournal(join(dir, 'agent'));
    first.record('cmd_1', ok(1));
    first.record('cmd_2', failed(2, 'UNSUPPORTED'));
    expect(existsSync(join(dir, 'agent', 'journal.json'))).toBe(true);

    const second = new CommandJournal(join(dir, 'agent'));
    expect(second.outcomeOf('cmd_1')).toEqual(ok(1));
    expect(second.outcomeOf('cmd_2')).toEqual(failed(2, 'UNSUPPORTED'));
    expect(second.lastAckedSeq).toBe(2);
    // Leaves no temp files behind.
    expect(readdirSync(join(dir, 'agent'))).toEqual(['journal.json']);
  });

  it('keeps lastAckedSeq at the highest seq recorded, even when outcomes arrive out of order', () => {
    const j = new CommandJournal(dir);
    j.record('cmd_5', ok(5));
    expect(j.lastAckedSeq).toBe(5);
    j.record('cmd_3', ok(3));
    expect(j.lastAckedSeq).toBe(5);
    j.record('cmd_9', failed(9, 'X'));
    expect(j.lastAckedSeq).toBe(9);
    expect(new CommandJournal(dir).lastAckedSeq).toBe(9);
  });

  it('forgets the oldest outcomes past its capacity, keeping the newest', () => {
    // A full journal from an earlier run (written directly: recording 1,000 commands one by one is slow).
    seedFullJournal();
    const j = new CommandJournal(dir);
    expect(j.outcomeOf('cmd_1')).toEqual(ok(1));
    expect(j.outcomeOf(`cmd_${JOURNAL_CAPACITY}`)).toEqual(ok(JOURNAL_CAPACITY));
    const total = JOURNAL_CAPACITY + 5;
    for (let seq = JOURNAL_CAPACITY + 1; seq <= total; seq++) j.record(`cmd_${seq}`, ok(seq));
    for (let seq = 1; seq <= 5; seq++) expect(j.outcomeOf(`cmd_${seq}`), `cmd_${seq}`).toBeUndefined();
    expect(j.outcomeOf('cmd_6')).toEqual(ok(6));
    expect(j.outcomeOf(`cmd_${total}`)).toEqual(ok(total));
    expect(j.lastAckedSeq).toBe(total);

    const reopened = new CommandJournal(dir);
    expect(reopened.outcomeOf('cmd_5')).toBeUndefined();
    expect(reopened.outcomeOf('cmd_6')).toEqual(ok(6));
    expect(reopened.outcomeOf(`cmd_${total}`)).toEqual(ok(total));
    expect(reopened.lastAckedSeq).toBe(total);
    const file = JSON.parse(readFileSync(join(dir, 'journal.json'), 'utf8')) as { outcomes: unknown[] };
    expect(file.outcomes).toHaveLength(JOURNAL_CAPACITY);
  });

  it('counts a re-recorded command as the newest, so it is evicted last', () => {
    seedFullJournal();
    const j = new CommandJournal(dir);
    j.record('cmd_1', failed(1, 'AGAIN'));
    j.record('cmd_new', ok(JOURNAL_CAPACITY + 1));
    expect(j.outcomeOf('cmd_1')).toEqual(failed(1, 'AGAIN'));
    expect(j.outcomeOf('cmd_2')).toBeUndefined();
    expect(j.outcomeOf('cmd_3')).toEqual(ok(3));
  });
});

/** Writes a journal file holding JOURNAL_CAPACITY outcomes cmd_1..cmd_N, oldest first. */
function seedFullJournal(): void {
  const outcomes = Array.from({ length: JOURNAL_CAPACITY }, (_, i) => [`cmd_${i + 1}`, ok(i + 1)]);
  writeFileSync(join(dir, 'journal.json'), JSON.stringify({ lastAckedSeq: JOURNAL_CAPACITY, outcomes }));
}
