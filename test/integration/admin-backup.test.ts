// `pixelfleet admin backup --out <file>`: SQLite's online backup taken inside the serving control
// plane (AdminService.Backup streams it to the CLI), consistent while writes go on; and the
// documented restore: `pixelfleet serve` on the copy, as a real process, has the data.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '@pixelfleet/control-plane';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { cleanEnv, PIXELFLEET_BIN, startCli } from '../support/cli-process';

let t: TestControlPlane;
const dir = mkdtempSync(join(tmpdir(), 'pf-backup-'));
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  t = await startTestControlPlane({ overrides: { geoip: { enabled: false } } });
});
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
});
afterAll(async () => {
  await t.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function admin(server: string, args: string[], token = TEST_ADMIN_TOKEN) {
  let stdout = '';
  let stderr = '';
  const code = await runAdminCli(args, { env: { PIXELFLEET_ADMIN_SERVER: server, PIXELFLEET_ADMIN_TOKEN: token }, stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
  return { code, stdout, stderr };
}

const count = (db: Database.Database, table: string) => (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;

describe('pixelfleet admin backup', () => {
  it('copies the live database consistently while the control plane keeps writing', async () => {
    // ~12 MB of events, so the backup takes many steps (100 pages each) between event-loop turns.
    const pad = 'x'.repeat(2_000);
    t.cp.db.transaction(() => {
      for (let i = 0; i < 6_000; i += 1) t.cp.events.record('test.fill', {}, { i, pad });
    })();
    const usersBefore = count(t.cp.db, 'users');
    // Writes go on while the backup runs: one new user per event-loop turn until it is done.
    let writing = true;
    let written = 0;
    const writer = (async () => {
      while (writing) {
        t.cp.accounts.createUser(`during-${written}@example.com`);
        written += 1;
        await new Promise((r) => setImmediate(r));
      }
    })();
    const out = join(dir, 'live.sqlite');
    const r = await admin(t.started.grpcAddress, ['backup', '--out', out, '--json']);
    writing = false;
    await writer;
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as { out: string; bytes: number; sha256: string };
    expect(result).toMatchObject({ out, bytes: statSync(out).size });
    expect(result.sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(written).toBeGreaterThan(1); // the control plane wrote while the copy was taken
    expect(statSync(out).mode & 0o777).toBe(0o600);
    expect(existsSync(`${out}.part`)).toBe(false);
    // Nothing is left on the server: the copy is removed once sent.
    expect(readdirSync(join(t.dataDir, 'backups'))).toEqual([]);

    const copy = new Database(out, { readonly: true });
    try {
      expect(copy.pragma('integrity_check', { simple: true })).toBe('ok');
      expect(copy.pragma('foreign_key_check')).toEqual([]);
      expect(count(copy, 'events')).toBeGreaterThanOrEqual(6_000);
      // One state of the database: every user written before, some of those written during.
      const users = count(copy, 'users');
      expect(users).toBeGreaterThanOrEqual(usersBefore);
      expect(users).toBeLessThanOrEqual(usersBefore + written);
    } finally {
      copy.close();
    }
  });

  it('never writes through a file planted where its part file goes (a link, or one others may read)', async () => {
    const out = join(dir, 'planted.sqlite');
    const victim = join(dir, 'victim.txt');
    writeFileSync(victim, 'not a database');
    symlinkSync(victim, `${out}.part`);
    const r = await admin(t.started.grpcAddress, ['backup', '--out', out, '--json']);
    expect(r.code).toBe(0);
    expect(readFileSync(victim, 'utf8')).toBe('not a database');
    expect(lstatSync(out).isSymbolicLink()).toBe(false);
    expect(statSync(out).mode & 0o777).toBe(0o600);
    writeFileSync(`${out}.part`, '', { mode: 0o666 });
    expect((await admin(t.started.grpcAddress, ['backup', '--out', out, '--json'])).code).toBe(0);
    expect(statSync(out).mode & 0o777).toBe(0o600);
  });

  it('refuses a wrong admin token and leaves no file behind', async () => {
    const out = join(dir, 'refused.sqlite');
    expect(await admin(t.started.grpcAddress, ['backup', '--out', out], 'wrong-token-wrong-token')).toMatchObject({ code: 1, stderr: 'error: UNAUTHENTICATED: invalid admin token\n' });
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.part`)).toBe(false);
    expect(await admin(t.started.grpcAddress, ['backup'])).toMatchObject({ code: 2 });
  });

  it('restores: `pixelfleet serve` on the copy has the users, projects and events', async () => {
    const user = t.cp.accounts.createUser('restore-owner@example.com');
    const project = t.cp.accounts.createProject(user.userId, 'Restored', 'europe');
    const out = join(dir, 'restore.sqlite');
    const r = await admin(t.started.grpcAddress, ['backup', '--out', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Backup written to ${out}`);
    // Written after the backup: not in the copy.
    const later = t.cp.accounts.createProject(user.userId, 'Later', 'europe');

    // The documented restore: the copy becomes <dataDir>/pixelfleet.sqlite of a stopped control plane.
    const dataDir = join(dir, 'restored-data');
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir);
    copyFileSync(out, join(dataDir, 'pixelfleet.sqlite'));
    const config = join(dir, 'restored.json');
    writeFileSync(config, JSON.stringify({ adminToken: TEST_ADMIN_TOKEN, agentJoinToken: 'restore-join-token-0123', dataDir, geoip: { enabled: false }, http: { port: 0 }, grpc: { port: 0 } }));
    const serve = startCli(PIXELFLEET_BIN, ['serve', '--config', config], cleanEnv());
    children.push(serve.child);
    const grpc = (await serve.output(/gRPC\s+(\S+)/))[1]!;

    expect(await admin(grpc, ['project', 'stats', '--project', project.projectId, '--json'])).toMatchObject({ code: 0 });
    expect(await admin(grpc, ['project', 'stats', '--project', later.projectId])).toMatchObject({ code: 1, stderr: `error: NOT_FOUND: project ${later.projectId} not found\n` });
    serve.child.kill('SIGTERM');
    expect(await serve.exited).toBe(0);
    const restored = new Database(join(dataDir, 'pixelfleet.sqlite'), { readonly: true });
    try {
      expect(restored.prepare('SELECT email FROM users WHERE id = ?').get(user.userId)).toEqual({ email: 'restore-owner@example.com' });
      expect(count(restored, 'events')).toBeGreaterThanOrEqual(6_000);
    } finally {
      restored.close();
    }
  });
});
