// Apps under accounts that are not the agent's (Windows; issue 22). `service install` makes one
// local account per app slot, pixelfleet-app-1 … pixelfleet-app-<count> (app-job.exe
// --prepare-account: a password nobody knows, batch logon only), and locks the data folder to the
// service account and Administrators. Each app the agent starts runs as a free one of them
// (app-job.exe --account: an S4U logon, a window station and desktop of its own), and reaches only:
//
//   <dataDir>\sessions\<sessionId>\      Modify, while it runs (its log, profile and temp folders)
//   <dataDir>\builds\<uploadId>\         Read & execute, while it runs
//     <Project>\Saved\                   Modify, while it runs (Unreal writes its config and logs there)
//
// A grant is an inheritable ACE on the top folder, which Windows carries onto everything below (one
// icacls call; a few hundred files in a packaged build). The folders between the data folder and
// these need no grant: every account holds "Bypass traverse checking". The app's tree lives in the
// launcher's job object, which ends it with the app, so when revoke() runs nothing of the account's
// is left running; the ACEs are then removed and the account given to the next session.
//
// What only a real Windows machine shows (Wine neither enforces ACLs nor logs accounts on): that
// the app is refused worker.json and another build's folder, and that Unreal renders on its GPU
// under such an account (docs/security.md).
import { access, mkdir, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { execa } from 'execa';
import type { AppAccountGrants, BuildFolders, WindowsAppAccount } from './app-accounts';

/** The local accounts' names: this prefix and the slot's number (1-based), under SAM's 20-character limit. */
export const WINDOWS_APP_ACCOUNT_PREFIX = 'pixelfleet-app-';
/** The most accounts `appAccounts.count` may name on Windows (the names stay within 20 characters). */
export const MAX_WINDOWS_APP_ACCOUNTS = 4096;

export function windowsAppAccountName(slot: number): string {
  if (!Number.isInteger(slot) || slot < 1 || slot > MAX_WINDOWS_APP_ACCOUNTS) throw new RangeError(`app account slot ${slot} is not 1…${MAX_WINDOWS_APP_ACCOUNTS}`);
  return `${WINDOWS_APP_ACCOUNT_PREFIX}${slot}`;
}

/** Every account of a pool of `count`, in slot order. */
export function windowsAppAccountNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => windowsAppAccountName(i + 1));
}

/** Rights an app gets on a folder, as icacls writes them; (OI)(CI): everything below inherits them. */
export const FOLDER_RIGHTS = { readExecute: '(OI)(CI)RX', modify: '(OI)(CI)M' } as const;

/** The icacls arguments (after `icacls`) that give `account` `rights` on `folder`, beside what is there. */
export function icaclsGrant(folder: string, account: string, rights: string): string[] {
  return [folder, '/grant', `${account}:${rights}`];
}

/** The icacls arguments that remove every ACE granting to `accounts` on `folder` (and the inherited ones below it). */
export function icaclsRevoke(folder: string, accounts: readonly string[]): string[] {
  return [folder, '/remove:g', ...accounts];
}

/** Runs icacls with these arguments; rejects on a non-zero exit, naming icacls's own message. */
export type IcaclsRunner = (args: readonly string[]) => Promise<void>;

export const runIcacls: IcaclsRunner = async (args) => {
  const result = await execa('icacls', args, { reject: false, stdin: 'ignore', all: true, windowsHide: true });
  if (result.exitCode !== 0) throw new Error(`icacls ${args.join(' ')} exited ${String(result.exitCode)}: ${(result.all ?? result.shortMessage).trim()}`);
};

interface WindowsGrant {
  readonly account: WindowsAppAccount;
  readonly folders: readonly string[];
}

/** Gives each app a local account of the pool and exactly its folders (see the top of this file). */
export class WindowsAppAccounts implements AppAccountGrants {
  private readonly names: readonly string[];
  private readonly grants = new Map<string, WindowsGrant>();

  constructor(
    private readonly dataDir: string,
    count: number,
    private readonly icacls: IcaclsRunner = runIcacls,
  ) {
    this.names = windowsAppAccountNames(count);
  }

  /**
   * At start, before any app runs: whatever a previous run of the agent granted the accounts (it
   * died before revoking) is removed from every build and session folder.
   */
  async protectDataDir(): Promise<void> {
    for (const parent of ['builds', 'sessions']) {
      let entries;
      try {
        entries = await readdir(join(this.dataDir, parent), { withFileTypes: true });
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue;
        throw err;
      }
      for (const entry of entries) {
        if (entry.isDirectory()) await this.icacls(icaclsRevoke(join(this.dataDir, parent, entry.name), this.names));
      }
    }
  }

  async grant(sessionId: string, build: BuildFolders | undefined, sessionDir: string): Promise<WindowsAppAccount | undefined> {
    if (this.grants.has(sessionId)) throw new Error(`session ${sessionId} already has an account`);
    const used = new Set([...this.grants.values()].map((g) => g.account.name));
    const name = this.names.find((n) => !used.has(n));
    if (name === undefined) return undefined;
    const account: WindowsAppAccount = { kind: 'windows', name };
    const granted: string[] = [];
    // Held from here: a failure below revokes what was granted, and a concurrent grant takes another account.
    this.grants.set(sessionId, { account, folders: granted });
    try {
      await mkdir(sessionDir, { recursive: true });
      const plan: [string, string][] = [[sessionDir, FOLDER_RIGHTS.modify]];
      if (build !== undefined) {
        await mkdir(build.savedDir, { recursive: true });
        plan.push([build.dir, FOLDER_RIGHTS.readExecute], [build.savedDir, FOLDER_RIGHTS.modify]);
      }
      for (const [folder, rights] of plan) {
        granted.push(folder);
        await this.icacls(icaclsGrant(folder, name, rights));
      }
      return account;
    } catch (err) {
      await this.revoke(sessionId);
      throw err;
    }
  }

  /**
   * Removes the account's ACEs from its folders, deepest first, then frees it. A folder already gone
   * is fine; an ACE that could not be removed keeps the account out of use (it throws, after trying
   * every folder; a later call tries them all again).
   */
  async revoke(sessionId: string): Promise<void> {
    const grant = this.grants.get(sessionId);
    if (grant === undefined) return;
    let failure: Error | undefined;
    for (const folder of [...grant.folders].reverse()) {
      try {
        await this.icacls(icaclsRevoke(folder, [grant.account.name]));
      } catch (err) {
        if (await access(folder).then(() => true, () => false)) failure ??= err as Error;
      }
    }
    if (failure !== undefined) throw failure;
    this.grants.delete(sessionId);
  }

  get inUse(): number {
    return this.grants.size;
  }
}
