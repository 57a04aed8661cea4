// Apps under accounts that are not the agent's (Linux; issue 22). The agent runs as root; each app
// it starts runs under a uid of its own from `appAccounts` (no two running apps share one), with a
// gid shared only by the apps of one build (one customer's files), and reaches nothing else:
//
//   <dataDir>             0711 root   traversable, not listable
//     worker.json, the journal, apps/, log-spool/ …   0600 / 0700 root
//     builds/             0711 root
//       <uploadId>/       0700 root; 0750 root:<the build's gid> while an app of it runs
//         <Project>/Saved/   2770 root:<the build's gid>
//       <uploadId>.zip…, index.json   0600 root
//     sessions/           0711 root
//       <sessionId>/      0700 <the app's uid>:<gid> while it runs; root again after
//
// Each grant is one chown and one chmod of a top folder, whatever the build's size: what lies below
// is reached only through it. A uid or gid goes back to the pool only once nothing reaches through
// it any more (the session folder is root's again, the build's folder too when its last app
// ended), and whatever process still runs under a returned uid is killed first, so a process that
// escaped its session never meets the next session's files.
//
// The build's folder is read-only to its apps except Unreal's Saved/ in it, which the build's apps
// share (group-writable, setgid; the agent sets umask APP_UMASK, 002, which its apps inherit, so
// what one app writes the next app of the build may rewrite; no other uid reaches the folder).
//
// Not covered here: /proc/<pid>/cmdline is readable by every uid unless /proc is mounted with
// hidepid=invisible (the agent warns at start). Windows: windows-app-accounts.ts, a local account
// per slot.
import { chmod, chown, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';

/** The uid and gid an app runs under (Linux). */
export interface PosixAppAccount {
  readonly kind: 'posix';
  readonly uid: number;
  readonly gid: number;
}

/** The local account an app runs under (Windows: app-job.exe --account; windows-app-accounts.ts). */
export interface WindowsAppAccount {
  readonly kind: 'windows';
  readonly name: string;
}

export type AppAccount = PosixAppAccount | WindowsAppAccount;

/** The build a session's app runs: its cache folder, and Unreal's Saved folder in it (the one place there the app writes). */
export interface BuildFolders {
  readonly uploadId: string;
  readonly dir: string;
  readonly savedDir: string;
}

/** What gives each app its account and exactly its folders: AppAccounts (Linux), WindowsAppAccounts. */
export interface AppAccountGrants {
  /** At start, before any app runs: takes back whatever a previous run granted. */
  protectDataDir(): Promise<void>;
  /** The session's account with its folders opened to it; undefined when every account is in use. */
  grant(sessionId: string, build: BuildFolders | undefined, sessionDir: string): Promise<AppAccount | undefined>;
  /** After the session's app exited: its folders closed again, its account free. Idempotent. */
  revoke(sessionId: string): Promise<void>;
  readonly inUse: number;
}

/** The ids the agent may give apps: firstId … firstId + count − 1, as uids and as gids. */
export interface AppAccountRange {
  readonly firstId: number;
  readonly count: number;
}

/** What one running app holds. */
interface Grant {
  readonly account: PosixAppAccount;
  /** Apps of the same build share its gid; '' for a session with no cached build (its own gid). */
  readonly buildKey: string;
  readonly buildDir: string | undefined;
  readonly sessionDir: string;
}

/** Hands out accounts: a uid per running app, a gid per build in use. Pure bookkeeping; AppAccounts does the files. */
export class AppAccountPool {
  private readonly grants = new Map<string, Grant>();

  constructor(private readonly range: AppAccountRange) {}

  /** The account for a new session; undefined when every uid is in use. */
  take(sessionId: string, buildKey: string, buildDir: string | undefined, sessionDir: string): PosixAppAccount | undefined {
    if (this.grants.has(sessionId)) throw new Error(`session ${sessionId} already has an account`);
    const grants = [...this.grants.values()];
    const uid = this.lowestFree(new Set(grants.map((g) => g.account.uid)));
    if (uid === undefined) return undefined;
    const sameBuild = buildKey === '' ? undefined : grants.find((g) => g.buildKey === buildKey);
    const gid = sameBuild?.account.gid ?? this.lowestFree(new Set(grants.map((g) => g.account.gid)));
    if (gid === undefined) return undefined;
    const account = { kind: 'posix', uid, gid } as const;
    this.grants.set(sessionId, { account, buildKey, buildDir, sessionDir });
    return account;
  }

  get(sessionId: string): Grant | undefined {
    return this.grants.get(sessionId);
  }

  /** Forgets a session's account; true when it was the last app of its build (the build's gid is free too). */
  give(sessionId: string): boolean {
    const grant = this.grants.get(sessionId);
    if (grant === undefined) return false;
    this.grants.delete(sessionId);
    return grant.buildKey === '' || ![...this.grants.values()].some((g) => g.buildKey === grant.buildKey);
  }

  get inUse(): number {
    return this.grants.size;
  }

  private lowestFree(used: ReadonlySet<number>): number | undefined {
    for (let id = this.range.firstId; id < this.range.firstId + this.range.count; id++) if (!used.has(id)) return id;
    return undefined;
  }
}

/**
 * The umask the agent runs with when apps have accounts (its apps inherit it): the group may write,
 * so a file one app of a build writes in its Saved/ the next may rewrite. It must keep other uids'
 * read: an app reads its build's files as "other" (they are root's, created by the extraction with
 * 0644/0755, and only the build's top folder opens to its gid), so 007 would lock every app out
 * of its own build. The private files stay private by their explicit modes.
 */
export const APP_UMASK = 0o002;

/** The folders of <dataDir> an app may pass through (never list) to reach its own. */
const TRAVERSABLE = ['builds', 'sessions'] as const;

/** Gives each app an account and exactly the folders it needs (see the top of this file). */
export class AppAccounts implements AppAccountGrants {
  private readonly pool: AppAccountPool;

  constructor(
    private readonly dataDir: string,
    range: AppAccountRange,
    /** Ends every process of a uid; default killProcessesOf (Linux /proc). */
    private readonly endProcessesOf: (uid: number) => Promise<number> = killProcessesOf,
  ) {
    this.pool = new AppAccountPool(range);
  }

  /**
   * At start, before any app runs: the data folder becomes traversable only, everything in it but
   * builds/ and sessions/ private, and whatever a previous run left in those two (a build folder
   * granted to a gid, a session folder owned by an app's uid) root's and private again.
   */
  async protectDataDir(): Promise<void> {
    await mkdir(this.dataDir, { recursive: true });
    await chmod(this.dataDir, 0o711);
    for (const name of TRAVERSABLE) {
      await mkdir(join(this.dataDir, name), { recursive: true });
      await chmod(join(this.dataDir, name), 0o711);
    }
    for (const entry of await readdir(this.dataDir, { withFileTypes: true })) {
      if ((TRAVERSABLE as readonly string[]).includes(entry.name)) continue;
      await makePrivate(join(this.dataDir, entry.name), entry.isDirectory());
    }
    for (const name of TRAVERSABLE) {
      for (const entry of await readdir(join(this.dataDir, name), { withFileTypes: true })) {
        const path = join(this.dataDir, name, entry.name);
        await chown(path, 0, 0);
        await makePrivate(path, entry.isDirectory());
      }
    }
  }

  /**
   * A session's account, with its session folder made its own (created if needed) and its build's
   * folder opened to the build's gid. Undefined when every account is in use (more sessions than
   * `appAccounts.count`).
   */
  async grant(sessionId: string, build: BuildFolders | undefined, sessionDir: string): Promise<PosixAppAccount | undefined> {
    const account = this.pool.take(sessionId, build?.uploadId ?? '', build?.dir, sessionDir);
    if (account === undefined) return undefined;
    try {
      // A process left under this uid by an earlier run of the agent (it escaped that session) must not meet this one's files.
      await this.endProcessesOf(account.uid);
      await mkdir(sessionDir, { recursive: true, mode: 0o700 });
      await chown(sessionDir, account.uid, account.gid);
      await chmod(sessionDir, 0o700);
      if (build !== undefined) {
        await chown(build.dir, 0, account.gid);
        await chmod(build.dir, 0o750);
        await openToGroup(build.savedDir, account.gid);
      }
      return account;
    } catch (err) {
      await this.revoke(sessionId);
      throw err;
    }
  }

  /**
   * After the session's app exited: whatever still runs under its uid is killed, its session folder
   * is root's again and, when it was the last app of its build, so is the build's folder. Then the
   * account may be given out again. Idempotent.
   */
  async revoke(sessionId: string): Promise<void> {
    const grant = this.pool.get(sessionId);
    if (grant === undefined) return;
    await this.endProcessesOf(grant.account.uid);
    await closeFolder(grant.sessionDir);
    const lastOfBuild = this.pool.give(sessionId);
    if (lastOfBuild && grant.buildDir !== undefined) await closeFolder(grant.buildDir);
  }

  get inUse(): number {
    return this.pool.inUse;
  }
}

/**
 * Saved/ (made if missing) to root and the build's gid, group-writable and setgid: the files the
 * build's apps write there take the build's gid, and with the umask the agent gives its apps (002,
 * APP_UMASK) the next app of the build may rewrite them. Only this folder is touched: its parent is
 * root's and closed to apps, so nothing here can be a link an app planted, and the agent never walks
 * what the apps wrote (a walk as root through app-writable folders could be sent elsewhere).
 */
async function openToGroup(folder: string, gid: number): Promise<void> {
  await mkdir(folder, { recursive: true });
  await chown(folder, 0, gid);
  await chmod(folder, 0o2770);
}

async function makePrivate(path: string, isDirectory: boolean): Promise<void> {
  await chmod(path, isDirectory ? 0o700 : 0o600);
}

/** A top folder back to root, 0700 (a folder already gone is fine: nothing reaches through it). */
async function closeFolder(path: string): Promise<void> {
  try {
    await chown(path, 0, 0);
    await chmod(path, 0o700);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/**
 * SIGKILLs every process whose real or effective uid is `uid` (read from /proc/<pid>/status);
 * resolves with how many were signalled. A process that is gone meanwhile is skipped.
 */
export async function killProcessesOf(uid: number): Promise<number> {
  let killed = 0;
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let status: string;
    try {
      status = await readFile(join('/proc', name, 'status'), 'utf8');
    } catch {
      continue;
    }
    const uids = /^Uid:\s+(\d+)\s+(\d+)/m.exec(status);
    if (uids === null || (Number(uids[1]) !== uid && Number(uids[2]) !== uid)) continue;
    try {
      process.kill(Number(name), 'SIGKILL');
      killed++;
    } catch {
      // Exited since /proc was read.
    }
  }
  return killed;
}

/** Whether /proc hides other users' processes (hidepid=1/2 or invisible/noaccess): otherwise apps read each other's command lines. */
export async function procHidesOtherUsers(mountinfo = '/proc/self/mountinfo'): Promise<boolean> {
  const text = await readFile(mountinfo, 'utf8');
  return text.split('\n').some((line) => {
    const [before, after] = line.split(' - ');
    if (before?.split(' ')[4] !== '/proc' || after === undefined) return false;
    return /(^|,)hidepid=(1|2|noaccess|invisible)(,|$)/.test(after.split(' ')[2] ?? '');
  });
}
