// `pixelfleet admin backup --out <file>`: SQLite's online backup taken inside the serving control
// plane (AdminService.Backup streams it to the CLI), consistent while writes go on; and the
// documented restore: `pixelfleet serve` on the copy, as a real process, has the data. And the
// ways a backup ends early: the client cancels or is interrupted, the copy cannot be read, the
// server dies; none leaves a file behind or a call hanging, and the next backup works.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, watch, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { credentials, Metadata, status, type ServiceError } from '@grpc/grpc-js';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '@pixelfleet/control-plane';
import { adminV1 } from '@pixelfleet/proto';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { cleanEnv, PIXELFLEET_BIN, startCli } from '../support/cli-process';
import { killAll, PROCESS_ADMIN_TOKEN, startServe } from '../support/fleet-processes';

let t: TestControlPlane;
const dir = mkdtempSync(join(tmpdir(), 'pf-backup-'));
const children: ChildProcessWithoutNullStreams[] = [];

beforeAll(async () => {
  t = await startTestControlPlane({ overrides: { geoip: { enabled: false } } });
});
afterEach(async () => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  await killAll();
});
afterAll(async () => {
  await t.destroy();
  rmSync(dir, { recursive: true, force: true });
});

async function admin(server: string, args: string[], token = TEST_ADMIN_TOKEN, interrupted?: Promise<void>) {
  let stdout = '';
  let stderr = '';
  const code = await runAdminCli(args, { env: { PIXELFLEET_ADMIN_SERVER: server, PIXELFLEET_ADMIN_TOKEN: token }, stdout: (s) => (stdout += s), stderr: (s) => (stderr += s), ...(interrupted ? { interrupted } : {}) });
  return { code, stdout, stderr };
}

/** Resolves once `check()` holds, checked now and at each change in `folder` (fs.watch: an event, not a poll). */
function whenFolder(folder: string, check: () => boolean): Promise<void> {
  return new Promise((resolve, reject) => {
    const watcher = watch(folder);
    const test = () => {
      if (!check()) return;
      watcher.close();
      resolve();
    };
    watcher.on('change', test);
    watcher.on('error', reject);
    test();
  });
}

/** Resolves once the part file of `out` holds at least `bytes` (the CLI is writing the copy). */
const partHolds = (out: string, bytes: number) => whenFolder(dirname(out), () => existsSync(`${out}.part`) && statSync(`${out}.part`).size >= bytes);

/** Records padded events until the database file takes at least `mib` MiB (many 1 MiB pieces to send). */
function fillTo(db: Database.Database, record: (i: number) => void, mib: number): void {
  const bytes = () => (db.pragma('page_count', { simple: true }) as number) * (db.pragma('page_size', { simple: true }) as number);
  for (let batch = 0; bytes() < mib * 1024 * 1024; batch += 1) {
    db.transaction(() => {
      for (let i = 0; i < 2_000; i += 1) record(batch * 2_000 + i);
    })();
  }
}

// Raw SQL on purpose: a backup is a copy of the database file, so its copies are opened and checked as
// SQLite files (integrity, rows per table, a row restored), not through a running control plane.
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
        await t.cp.accounts.createUser(`during-${written}@example.com`);
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
    expect(await admin(t.started.grpcAddress, ['backup', '--out', out], 'wrong-token-wrong-token')).toMatchObject({ code: 1, stderr: `error: UNAUTHENTICATED: invalid admin token; no backup was written to ${out}\n` });
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.part`)).toBe(false);
    expect(await admin(t.started.grpcAddress, ['backup'])).toMatchObject({ code: 2 });
  });

  it('restores: `pixelfleet serve` on the copy has the users, projects and events', async () => {
    const user = await t.cp.accounts.createUser('restore-owner@example.com');
    const project = await t.cp.accounts.createProject(user.userId, 'Restored', 'europe');
    const out = join(dir, 'restore.sqlite');
    const r = await admin(t.started.grpcAddress, ['backup', '--out', out]);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Backup written to ${out}`);
    // Written after the backup: not in the copy.
    const later = await t.cp.accounts.createProject(user.userId, 'Later', 'europe');

    // The documented restore: the copy becomes <dataDir>/pixelfleet.sqlite of a stopped control plane.
    const dataDir = join(dir, 'restored-data');
    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir);
    copyFileSync(out, join(dataDir, 'pixelfleet.sqlite'));
    const config = join(dir, 'restored.json');
    writeFileSync(config, JSON.stringify({ adminToken: TEST_ADMIN_TOKEN, agentJoinToken: 'restore-join-token-0123456789abcdef', dataDir, geoip: { enabled: false }, http: { port: 0 }, grpc: { port: 0 } }));
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

  it('a client that cancels after the first piece: the server removes its copy at once, and the next backup works', async () => {
    fillTo(t.cp.db, (i) => void t.cp.events.record('test.fill', {}, { i, pad: 'c'.repeat(2_000) }), 24);
    const backups = join(t.dataDir, 'backups');
    mkdirSync(backups, { recursive: true });
    const client = new adminV1.AdminServiceClient(t.started.grpcAddress, credentials.createInsecure());
    const metadata = new Metadata();
    metadata.set('authorization', `Bearer ${TEST_ADMIN_TOKEN}`);
    const call = client.backup({}, metadata);
    let copy = '';
    const firstPiece = new Promise<void>((resolve) =>
      call.once('data', (r: adminV1.BackupResponse) => {
        expect(r.chunk.length).toBe(1024 * 1024);
        // The server is sending its copy: one file, still there.
        const files = readdirSync(backups);
        expect(files).toHaveLength(1);
        copy = join(backups, files[0]!);
        call.cancel();
        resolve();
      }),
    );
    const ended = new Promise<ServiceError>((resolve) => call.on('error', resolve));
    await firstPiece;
    expect((await ended).code).toBe(status.CANCELLED);
    await whenFolder(backups, () => !existsSync(copy));
    client.close();
    expect(readdirSync(backups)).toEqual([]);
    // The operator's log says who went away.
    const abandoned = t.logs.lines.map((l) => JSON.parse(l) as { level: number; msg: string; peer?: string }).filter((l) => l.msg.startsWith('database backup abandoned'));
    expect(abandoned).toEqual([{ level: 40, time: expect.any(String) as string, component: 'admin-service', peer: expect.stringMatching(/^127\.0\.0\.1:\d+$/) as string, msg: 'database backup abandoned: the client cancelled or went away; the copy is removed' }]);

    const out = join(dir, 'after-cancel.sqlite');
    const r = await admin(t.started.grpcAddress, ['backup', '--out', out, '--json']);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const copied = new Database(out, { readonly: true });
    try {
      expect(copied.pragma('integrity_check', { simple: true })).toBe('ok');
    } finally {
      copied.close();
    }
    expect(readdirSync(backups)).toEqual([]);
  });

  it('Ctrl-C during a backup: the CLI cancels, removes its part file and exits 130; the server removes its copy', async () => {
    fillTo(t.cp.db, (i) => void t.cp.events.record('test.fill', {}, { i, pad: 'i'.repeat(2_000) }), 24);
    const out = join(dir, 'interrupted.sqlite');
    const backups = join(t.dataDir, 'backups');
    const r = await admin(t.started.grpcAddress, ['backup', '--out', out], TEST_ADMIN_TOKEN, partHolds(out, 1024 * 1024));
    expect(r).toEqual({ code: 130, stdout: '', stderr: `error: interrupted; no backup was written to ${out}\n` });
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.part`)).toBe(false);
    await whenFolder(backups, () => readdirSync(backups).length === 0);
    expect((await admin(t.started.grpcAddress, ['backup', '--out', out])).code).toBe(0);
  });

  it('a copy that cannot be read ends the call with INTERNAL (no hang, no crash), and the next backup works', async () => {
    const backups = join(t.dataDir, 'backups');
    // The copy vanishes between being taken and being read (the moment the server logs that it took it).
    const untap = t.logs.tap((line) => {
      if (line.includes('"msg":"database backup taken; sending it"')) for (const f of readdirSync(backups)) rmSync(join(backups, f));
    });
    const out = join(dir, 'unreadable.sqlite');
    let r;
    try {
      r = await admin(t.started.grpcAddress, ['backup', '--out', out]);
    } finally {
      untap();
    }
    expect(r).toEqual({ code: 1, stdout: '', stderr: `error: INTERNAL: internal error; no backup was written to ${out}\n` });
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.part`)).toBe(false);
    expect(t.logs.text()).toMatch(/"method":"Backup".*ENOENT|ENOENT.*"method":"Backup"/);
    expect((await admin(t.started.grpcAddress, ['backup', '--out', out])).code).toBe(0);
    expect(readdirSync(backups)).toEqual([]);
  });

  it('a server that dies mid-backup: no --out file, no part file, one line and exit 1; restarted, it cleans up and backs up again', async () => {
    // A database of ~48 MiB in its own data dir, served by a real `pixelfleet serve` process.
    const dataDir = join(dir, 'dying-data');
    const seeded = await startTestControlPlane({ dataDir, overrides: { geoip: { enabled: false } } });
    fillTo(seeded.cp.db, (i) => void seeded.cp.events.record('test.fill', {}, { i, pad: 'd'.repeat(2_000) }), 48);
    await seeded.stop();
    const serve = await startServe({ dataDir, configDir: dir, config: { geoip: { enabled: false }, logLevel: 'info' } });
    const out = join(dir, 'dying.sqlite');
    const killed = partHolds(out, 1024 * 1024).then(() => serve.kill());
    const r = await admin(serve.grpcAddress, ['backup', '--out', out], PROCESS_ADMIN_TOKEN);
    await killed;
    expect(r.code).toBe(1);
    expect(r.stdout).toBe('');
    // One line, e.g. `error: UNAVAILABLE: read ECONNRESET; no backup was written to …`.
    expect(r.stderr).toMatch(new RegExp(`^error: UNAVAILABLE: [^\\n]+; no backup was written to ${out}\\n$`));
    expect(existsSync(out)).toBe(false);
    expect(existsSync(`${out}.part`)).toBe(false);
    // The killed server left its copy; the next start removes it before taking any.
    expect(readdirSync(join(dataDir, 'backups'))).toHaveLength(1);
    const again = await startServe({ dataDir, configDir: dir, config: { geoip: { enabled: false }, logLevel: 'info' } });
    expect(existsSync(join(dataDir, 'backups'))).toBe(false);
    expect((await admin(again.grpcAddress, ['backup', '--out', out], PROCESS_ADMIN_TOKEN)).code).toBe(0);
    expect(statSync(out).size).toBeGreaterThanOrEqual(48 * 1024 * 1024);
  }, 60_000);
});
