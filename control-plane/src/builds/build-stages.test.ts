// The build stage table against the spec's Build pipeline table (read from the spec when it is
// beside the repository, else from the committed copy, which is checked against the spec), every
// (from, to, move) pair, the refusal messages, and the SQL CHECK on builds.status.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openDatabase } from '../db/database';
import { seedUser, seedProject } from '../repositories/repository-test-db';
import { DomainError } from '../errors';
import { specSection, tableAfter } from '../lib/spec-sections';
import { BUILD_EVENTS } from '../webhooks/webhook-envelope';
import { BUILD_STAGES, BUILD_STATUSES, DECIDED_MOVES, DISTRIBUTING, INITIAL_BUILD_STATUS, canMoveBuild, isBuildStatus, isTerminal, requireBuildMove, type BuildMove, type BuildStatus } from './build-stages';

const pipeline = specSection(new URL('./spec-build-pipeline.fixture.md', import.meta.url), '### Build pipeline', '### Session status');
const distributeFile = specSection(new URL('./spec-distribute-file.fixture.md', import.meta.url), '#### POST /projects/distribute-file', '#### GET /projects/userStats');
const events = specSection(new URL('../webhooks/spec-events.fixture.md', import.meta.url), '### Envelope', '## Errors');

const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);

/** The spec's table as { status, event, next, terminal, setLive }. */
const specRows = tableAfter(pipeline.text, '### Build pipeline').map(([state = '', , fired = '', next = '']) => ({ state, fired, next }));
const specStatuses = specRows.map((r) => ticked(r.state)[0]!);

describe('the committed copies of the spec', () => {
  it('are the spec sections word for word when the spec is beside the repository', () => {
    for (const section of [pipeline, distributeFile, events]) {
      expect(section.fromCopy.length).toBeGreaterThan(100);
      if (section.fromSpec !== undefined) expect(section.fromCopy).toBe(section.fromSpec);
    }
    expect(specRows).toHaveLength(9);
  });
});

describe('BUILD_STAGES against the spec table', () => {
  it('lists the spec statuses, in the spec order, each with a stage', () => {
    expect([...BUILD_STATUSES]).toEqual(specStatuses);
    expect(Object.keys(BUILD_STAGES).sort()).toEqual([...BUILD_STATUSES].sort());
    expect(INITIAL_BUILD_STATUS).toBe(specStatuses[0]);
  });

  it.each(specRows.map((r) => [ticked(r.state)[0]!, r] as const))('%s: event fired, next statuses, terminal', (status, row) => {
    const stage = BUILD_STAGES[status as BuildStatus];
    expect(stage.event).toBe(ticked(row.fired)[0]);
    // Next: the statuses the cell names (it also names `autoRelease` and `uploadId`), and the moves we decided where it is silent.
    expect([...stage.next].sort()).toEqual([...ticked(row.next).filter(isBuildStatus), ...(DECIDED_MOVES[status as BuildStatus] ?? [])].sort());
    expect(isTerminal(status as BuildStatus)).toBe(/terminal/i.test(row.next));
    expect(stage.setLiveStatus).toBe(/Set Live action reports `Distribute`/.test(row.state) ? 'Distribute' : undefined);
  });

  it("fires each status's event with that status in the spec's Event kinds table", () => {
    const kinds = new Map(tableAfter(events.text, '### Event kinds').map(([event = '', , status = '']) => [ticked(event)[0]!, ticked(status)]));
    for (const status of BUILD_STATUSES) expect([status, kinds.get(BUILD_STAGES[status].event)]).toEqual([status, expect.arrayContaining([status])]);
    expect(kinds.get('build.distributing')).toContain(BUILD_STAGES[DISTRIBUTING].setLiveStatus);
    expect(new Set(BUILD_STATUSES.map((s) => BUILD_STAGES[s].event))).toEqual(new Set(BUILD_EVENTS));
  });

  it('lets an activation start from a ready or approved build (spec: distribute-file) and re-queue a distributing one', () => {
    expect(distributeFile.text).toContain('Pushes an approved or ready build to the streaming servers');
    expect(distributeFile.text).toContain('the build enters `Distributing to Servers` and fires `build.distributing`');
    expect(BUILD_STATUSES.filter((s) => BUILD_STAGES[s].activatable)).toEqual(['Ready', 'Distributing to Servers', 'Approved']);
  });
});

/** Allowed moves, written out independently of the table. */
const ALLOWED = new Set<string>([
  'pipeline pending→Downloading Files',
  'pipeline Downloading Files→Extracting & Scanning',
  'pipeline Downloading Files→Download Failed',
  'pipeline Downloading Files→Reject', // decided: no zip, or over the cap
  'pipeline Extracting & Scanning→Saving to Repository',
  'pipeline Extracting & Scanning→Reject',
  'pipeline Saving to Repository→Distributing to Servers',
  'pipeline Saving to Repository→Ready',
  'pipeline Saving to Repository→Reject', // decided: the repository could not store it
  'pipeline Ready→Distributing to Servers',
  'pipeline Distributing to Servers→Approved',
  'pipeline Distributing to Servers→Reject',
  'activation Ready→Distributing to Servers',
  'activation Approved→Distributing to Servers',
  'activation Distributing to Servers→Distributing to Servers',
]);

describe('every (move, from, to)', () => {
  for (const move of ['pipeline', 'activation'] as BuildMove[]) {
    for (const from of BUILD_STATUSES) {
      for (const to of BUILD_STATUSES) {
        const allowed = ALLOWED.has(`${move} ${from}→${to}`);
        it(`${move} ${from} → ${to} is ${allowed ? 'allowed' : 'refused with a DomainError'}`, () => {
          expect(canMoveBuild(from, to, move)).toBe(allowed);
          if (allowed) expect(requireBuildMove('upl_1', from, to, move)).toBe(BUILD_STAGES[to]);
          else expect(() => requireBuildMove('upl_1', from, to, move)).toThrow(DomainError);
        });
      }
    }
  }

  it('allows nothing after a terminal status but an activation of an approved build', () => {
    for (const status of ['Approved', 'Reject', 'Download Failed'] as const) {
      expect(isTerminal(status)).toBe(true);
      for (const to of BUILD_STATUSES) expect(canMoveBuild(status, to, 'pipeline')).toBe(false);
    }
  });

  it('names the build and its status in the refusal (precondition: 400 at the HTTP edge)', () => {
    const refusal = (fn: () => unknown) => {
      try {
        fn();
      } catch (err) {
        return err;
      }
      throw new Error('no refusal');
    };
    expect(refusal(() => requireBuildMove('upl_9', 'pending', DISTRIBUTING, 'activation'))).toMatchObject({
      kind: 'precondition',
      message: 'Build upl_9 cannot be distributed while its status is pending',
    });
    expect(refusal(() => requireBuildMove('upl_9', 'Reject', 'Ready', 'pipeline'))).toMatchObject({ kind: 'precondition', message: 'Build upl_9 cannot move from Reject to Ready' });
  });
});

describe('builds.status CHECK (migration 5)', () => {
  it('accepts exactly the table statuses', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-stages-'));
    const db = openDatabase(join(dir, 'cp.sqlite'));
    try {
      seedUser(db);
      seedProject(db, 'prj_1');
      // Raw on purpose: the CHECK constraint on builds.status is what is under test.
      const insert = db.prepare("INSERT INTO builds (upload_id, project_id, status, created_at, updated_at) VALUES (?, 'prj_1', ?, 1, 1)");
      BUILD_STATUSES.forEach((status, i) => insert.run(`upl_${i}`, status));
      for (const status of ['Distribute', 'test', 'Pending', 'Uploaded', '']) expect(() => insert.run(`upl_${status}`, status)).toThrow(/CHECK constraint failed/);
      const sql = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'builds'").get() as { sql: string }).sql;
      const listed = /CHECK \(status IN \(([^)]*)\)\)/.exec(sql)?.[1] ?? '';
      expect([...listed.matchAll(/'([^']*)'/g)].map((m) => m[1])).toEqual([...BUILD_STATUSES]);
    } finally {
      db.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
