// Apps under accounts of their own, with real processes, real uids and real files: an app started
// by the agent (root) under its uid tries to read what belongs to the agent and to other customers,
// and is refused; it reaches its own build and session folders. Linux, as root (CI runs as root).
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { APP_UMASK, AppAccountPool, AppAccounts, killProcessesOf, procHidesOtherUsers, type BuildFolders, type PosixAppAccount } from './app-accounts';
import { AppProcess, type AppExit } from './app-process';

const FIRST_ID = 64_100;

describe('AppAccountPool', () => {
  it('gives each running app a uid of its own and each build in use a gid of its own, and takes them back', () => {
    const pool = new AppAccountPool({ firstId: 5000, count: 3 });
    expect(pool.take('s1', 'upl_a', '/b/a', '/s/1')).toEqual({ kind: 'posix', uid: 5000, gid: 5000 });
    expect(pool.take('s2', 'upl_a', '/b/a', '/s/2')).toEqual({ kind: 'posix', uid: 5001, gid: 5000 }); // same build: same gid
    expect(pool.take('s3', '', undefined, '/s/3')).toEqual({ kind: 'posix', uid: 5002, gid: 5001 }); // no cached build: a gid of its own
    expect(pool.take('s4', 'upl_b', '/b/b', '/s/4')).toBeUndefined(); // every uid in use
    expect(() => pool.take('s1', 'upl_a', '/b/a', '/s/1')).toThrow('already has an account');
    expect(pool.give('s1')).toBe(false); // s2 still runs upl_a
    expect(pool.take('s4', 'upl_b', '/b/b', '/s/4')).toEqual({ kind: 'posix', uid: 5000, gid: 5002 });
    expect(pool.give('s2')).toBe(true); // the last app of upl_a
    expect(pool.take('s5', 'upl_c', '/b/c', '/s/5')).toEqual({ kind: 'posix', uid: 5001, gid: 5000 }); // upl_a's gid is free again
    expect(pool.give('nobody')).toBe(false);
    expect(pool.inUse).toBe(3);
  });
});

describe('procHidesOtherUsers', () => {
  it("reads /proc's mount options", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pixelfleet-mountinfo-'));
    const hides = (options: string): Promise<boolean> => {
      writeFileSync(join(dir, 'mountinfo'), `21 26 0:20 / /sys rw,relatime - sysfs sysfs rw\n22 26 0:21 / /proc rw,relatime - proc proc ${options}\n`);
      return procHidesOtherUsers(join(dir, 'mountinfo'));
    };
    try {
      expect(await hides('rw')).toBe(false);
      expect(await hides('rw,hidepid=invisible')).toBe(true);
      expect(await hides('rw,hidepid=2,gid=4')).toBe(true);
      expect(await hides('rw,hidepid=0')).toBe(false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

/** What the probe app found: each path → 'ok' or its error code. */
type ProbeReport = { uid: number; gid: number; home: string | undefined; results: Record<string, string> };

describe('apps under accounts of their own (Linux, real uids)', () => {
  let root: string;
  let dataDir: string;
  let probe: string;
  let accounts: AppAccounts;
  let previousUmask: number | undefined;

  beforeAll(async () => {
    if (process.platform !== 'linux' || process.getuid?.() !== 0) throw new Error('this test starts processes under other uids: run it on Linux as root (CI does)');
    if ((statSync(process.execPath).mode & 0o001) === 0) throw new Error(`${process.execPath} must be executable by other users for the apps' uids to run it`);
    // The agent's umask with appAccounts (main.ts): the build's files below are made under it, as
    // the extraction makes them (0644), and the apps inherit it.
    previousUmask = process.umask(APP_UMASK);
    root = mkdtempSync(join(tmpdir(), 'pixelfleet-accounts-'));
    chmodSync(root, 0o711);
    dataDir = join(root, 'agent');
    // As an agent leaves its data folder, some of it with the loose modes of an older version.
    mkdirSync(join(dataDir, 'builds', 'upl_a', 'Game'), { recursive: true });
    mkdirSync(join(dataDir, 'builds', 'upl_b', 'Game'), { recursive: true });
    mkdirSync(join(dataDir, 'sessions', 'session_old'), { recursive: true });
    mkdirSync(join(dataDir, 'log-spool', 'session_old'), { recursive: true });
    writeFileSync(join(dataDir, 'worker.json'), '{"workerToken":"pfw_secret"}', { mode: 0o600 });
    writeFileSync(join(dataDir, 'journal.json'), '{}', { mode: 0o644 });
    writeFileSync(join(dataDir, 'builds', 'upl_a', 'Game', 'data.pak'), 'customer A', { mode: 0o644 });
    writeFileSync(join(dataDir, 'builds', 'upl_b', 'Game', 'data.pak'), 'customer B', { mode: 0o644 });
    writeFileSync(join(dataDir, 'builds', 'upl_b.zip'), 'customer B archive', { mode: 0o644 });
    writeFileSync(join(dataDir, 'builds', 'index.json'), '{}', { mode: 0o644 });
    writeFileSync(join(dataDir, 'sessions', 'session_old', 'Game.log'), 'another session', { mode: 0o644 });
    writeFileSync(join(dataDir, 'log-spool', 'session_old', 'Game.log'), 'spooled', { mode: 0o644 });
    probe = join(root, 'probe.mjs');
    writeFileSync(
      probe,
      `import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
const results = {};
const attempt = (name, fn) => { try { fn(); results[name] = 'ok'; } catch (err) { results[name] = err.code ?? String(err); } };
const [dataDir, ownBuild, otherBuild, sessionDir] = process.argv.slice(2);
attempt('worker.json', () => readFileSync(dataDir + '/worker.json'));
attempt('journal', () => readFileSync(dataDir + '/journal.json'));
attempt('list data folder', () => readdirSync(dataDir));
attempt('list builds', () => readdirSync(dataDir + '/builds'));
attempt('build index', () => readFileSync(dataDir + '/builds/index.json'));
attempt('other build', () => readFileSync(dataDir + '/builds/' + otherBuild + '/Game/data.pak'));
attempt('other archive', () => readFileSync(dataDir + '/builds/upl_b.zip'));
attempt('other session', () => readFileSync(dataDir + '/sessions/session_old/Game.log'));
attempt('log spool', () => readFileSync(dataDir + '/log-spool/session_old/Game.log'));
attempt('own build', () => readFileSync(dataDir + '/builds/' + ownBuild + '/Game/data.pak'));
attempt('write own build', () => writeFileSync(dataDir + '/builds/' + ownBuild + '/Game/new.txt', 'x'));
attempt('write own Saved', () => writeFileSync(dataDir + '/builds/' + ownBuild + '/Game/Saved/' + process.getuid() + '.ini', 'x'));
attempt('write own session', () => writeFileSync(sessionDir + '/Game.log', 'mine'));
process.stdout.write(JSON.stringify({ uid: process.getuid(), gid: process.getgid(), home: process.env.HOME, results }) + '\\n');
`,
      { mode: 0o644 },
    );
    accounts = new AppAccounts(dataDir, { firstId: FIRST_ID, count: 3 });
    await accounts.protectDataDir();
  });

  afterAll(async () => {
    if (previousUmask !== undefined) process.umask(previousUmask);
    // Whatever a failed run left under the test's uids.
    for (let uid = FIRST_ID; uid < FIRST_ID + 3; uid++) await killProcessesOf(uid);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  /** A build of the test's data folder, with Unreal's Saved folder where the session manager puts it. */
  function buildFolders(uploadId: string): BuildFolders {
    const dir = join(dataDir, 'builds', uploadId);
    return { uploadId, dir, savedDir: join(dir, 'Game', 'Saved') };
  }

  async function runProbe(account: PosixAppAccount, ownBuild: string, otherBuild: string, sessionDir: string): Promise<ProbeReport> {
    const lines: string[] = [];
    const app = AppProcess.start({
      command: [process.execPath, probe],
      args: [dataDir, ownBuild, otherBuild, sessionDir],
      env: { PATH: process.env.PATH, HOME: sessionDir },
      account,
      log: pino({ level: 'silent' }),
    });
    app.on('output', (line) => lines.push(line.text));
    const exit = await new Promise<AppExit>((resolve) => app.once('exited', resolve));
    expect(exit.code, lines.join('\n') + (exit.spawnError ?? '')).toBe(0);
    return JSON.parse(lines.find((l) => l.startsWith('{')) ?? '{}') as ProbeReport;
  }

  it("an app reads its own build and writes its own session folder, and nothing of the agent's, another build's or another session's", async () => {
    const sessionDir = join(dataDir, 'sessions', 'session_1');
    const account = await accounts.grant('session_1', buildFolders('upl_a'), sessionDir);
    expect(account).toEqual({ kind: 'posix', uid: FIRST_ID, gid: FIRST_ID });
    const report = await runProbe(account!, 'upl_a', 'upl_b', sessionDir);
    expect(report.uid).toBe(FIRST_ID);
    expect(report.gid).toBe(FIRST_ID);
    expect(report.results).toEqual({
      'worker.json': 'EACCES',
      journal: 'EACCES',
      'list data folder': 'EACCES',
      'list builds': 'EACCES',
      'build index': 'EACCES',
      'other build': 'EACCES',
      'other archive': 'EACCES',
      'other session': 'EACCES',
      'log spool': 'EACCES',
      'own build': 'ok',
      'write own build': 'EACCES', // read-only but for Saved/: see app-accounts.ts
      'write own Saved': 'ok',
      'write own session': 'ok',
    });
    const saved = statSync(join(dataDir, 'builds', 'upl_a', 'Game', 'Saved'));
    expect([saved.uid, saved.gid, saved.mode & 0o7777]).toEqual([0, FIRST_ID, 0o2770]);
    // Setgid and the agent's umask: the file the app wrote belongs to the build's gid and the group may rewrite it (the build's next app).
    const written = statSync(join(dataDir, 'builds', 'upl_a', 'Game', 'Saved', `${FIRST_ID}.ini`));
    expect([written.gid, written.mode & 0o777]).toEqual([FIRST_ID, 0o664]);
    await accounts.revoke('session_1');
  });

  it("two apps of one build share its folder, not each other's session folders; taking an account back kills what runs under it and closes its folders", async () => {
    const build = buildFolders('upl_b');
    const firstDir = join(dataDir, 'sessions', 'session_2');
    const secondDir = join(dataDir, 'sessions', 'session_3');
    const first = (await accounts.grant('session_2', build, firstDir))!;
    const second = (await accounts.grant('session_3', build, secondDir))!;
    expect(second.gid).toBe(first.gid);
    expect(second.uid).not.toBe(first.uid);
    writeFileSync(join(firstDir, 'Game.log'), 'first app', { mode: 0o644 });

    const report = await runProbe(second, 'upl_b', 'upl_a', secondDir);
    expect(report.results['own build']).toBe('ok');
    expect(report.results['other build']).toBe('EACCES'); // upl_a is closed again since the first test
    const peek = await runProbe(second, 'upl_b', 'upl_a', firstDir);
    expect(peek.results['write own session']).toBe('EACCES'); // the first app's session folder

    // A process that escaped the first app's tree, still running under its uid.
    const escaped = spawn('sleep', ['600'], { uid: first.uid, gid: first.gid, stdio: 'ignore', detached: true });
    const gone = new Promise<NodeJS.Signals | null>((resolve) => escaped.once('exit', (_code, signal) => resolve(signal)));
    await accounts.revoke('session_2');
    expect(await gone).toBe('SIGKILL');
    expect(statSync(firstDir)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(firstDir).mode & 0o777).toBe(0o700);
    expect(statSync(build.dir).mode & 0o777).toBe(0o750); // the second app still runs from it
    await accounts.revoke('session_3');
    expect(statSync(build.dir)).toMatchObject({ uid: 0, gid: 0 });
    expect(statSync(build.dir).mode & 0o777).toBe(0o700);
    expect(accounts.inUse).toBe(0);
  });

  it('protectDataDir leaves the data folder traversable only, and everything in it private', () => {
    const mode = (...parts: string[]) => statSync(join(dataDir, ...parts)).mode & 0o777;
    expect(mode()).toBe(0o711);
    expect([mode('builds'), mode('sessions')]).toEqual([0o711, 0o711]);
    expect([mode('worker.json'), mode('journal.json'), mode('builds', 'index.json'), mode('builds', 'upl_b.zip')]).toEqual([0o600, 0o600, 0o600, 0o600]);
    expect([mode('log-spool'), mode('builds', 'upl_a'), mode('sessions', 'session_old')]).toEqual([0o700, 0o700, 0o700]);
  });
});
