// The Windows accounts' bookkeeping and the icacls calls they make, on real folders with icacls
// recorded (icacls and its ACLs exist on Windows only; Wine's does nothing). What the ACLs then
// refuse is for a real Windows machine: docs/security.md says what remains.
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { FOLDER_RIGHTS, WindowsAppAccounts, icaclsGrant, icaclsRevoke, windowsAppAccountName, windowsAppAccountNames, type IcaclsRunner } from './windows-app-accounts';

describe('windowsAppAccountName', () => {
  it('names slot 1 … 4096 within the 20 characters a local account may have', () => {
    expect(windowsAppAccountNames(3)).toEqual(['pixelfleet-app-1', 'pixelfleet-app-2', 'pixelfleet-app-3']);
    expect(windowsAppAccountName(4096).length).toBeLessThanOrEqual(20);
    expect(() => windowsAppAccountName(0)).toThrow(RangeError);
    expect(() => windowsAppAccountName(4097)).toThrow(RangeError);
  });
});

describe('WindowsAppAccounts', () => {
  let root: string;
  let dataDir: string;
  let calls: string[][];
  /** icacls as recorded; a call whose folder is in `failOn` fails as icacls would. */
  let failOn: Set<string>;
  const icacls: IcaclsRunner = (args) => {
    calls.push([...args]);
    return failOn.has(args[0]!) ? Promise.reject(new Error(`icacls ${args[0]!}: Access is denied`)) : Promise.resolve();
  };
  const build = (uploadId: string) => ({ uploadId, dir: join(dataDir, 'builds', uploadId), savedDir: join(dataDir, 'builds', uploadId, 'Game', 'Saved') });

  beforeEach(() => {
    root = mkdtempSync(join(tmpdir(), 'pixelfleet-win-accounts-'));
    dataDir = join(root, 'agent');
    mkdirSync(join(dataDir, 'builds', 'upl_a', 'Game'), { recursive: true });
    calls = [];
    failOn = new Set();
  });

  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('gives each app a free account, Modify on its session folder and Saved, Read & execute on its build, and takes exactly those back', async () => {
    const accounts = new WindowsAppAccounts(dataDir, 2, icacls);
    const sessionDir = join(dataDir, 'sessions', 'ses_1');
    const upl = build('upl_a');
    expect(await accounts.grant('ses_1', upl, sessionDir)).toEqual({ kind: 'windows', name: 'pixelfleet-app-1' });
    expect(calls).toEqual([
      icaclsGrant(sessionDir, 'pixelfleet-app-1', FOLDER_RIGHTS.modify),
      icaclsGrant(upl.dir, 'pixelfleet-app-1', FOLDER_RIGHTS.readExecute),
      icaclsGrant(upl.savedDir, 'pixelfleet-app-1', FOLDER_RIGHTS.modify),
    ]);
    expect(calls[0]).toEqual([sessionDir, '/grant', 'pixelfleet-app-1:(OI)(CI)M']);
    expect(calls[1]).toEqual([upl.dir, '/grant', 'pixelfleet-app-1:(OI)(CI)RX']);

    // A second app of the same build: another account; none left for a third.
    expect(await accounts.grant('ses_2', upl, join(dataDir, 'sessions', 'ses_2'))).toEqual({ kind: 'windows', name: 'pixelfleet-app-2' });
    expect(await accounts.grant('ses_3', undefined, join(dataDir, 'sessions', 'ses_3'))).toBeUndefined();
    expect(accounts.inUse).toBe(2);

    calls = [];
    await accounts.revoke('ses_1');
    expect(calls).toEqual([icaclsRevoke(upl.savedDir, ['pixelfleet-app-1']), icaclsRevoke(upl.dir, ['pixelfleet-app-1']), icaclsRevoke(sessionDir, ['pixelfleet-app-1'])]);
    expect(calls[0]).toEqual([upl.savedDir, '/remove:g', 'pixelfleet-app-1']);
    await accounts.revoke('ses_1'); // idempotent
    expect(calls).toHaveLength(3);
    // The freed account goes to the next session.
    expect(await accounts.grant('ses_3', undefined, join(dataDir, 'sessions', 'ses_3'))).toEqual({ kind: 'windows', name: 'pixelfleet-app-1' });
  });

  it('takes back what was granted when a grant fails halfway, and keeps an account whose grant could not be removed out of use', async () => {
    const accounts = new WindowsAppAccounts(dataDir, 1, icacls);
    const upl = build('upl_a');
    failOn.add(upl.dir);
    await expect(accounts.grant('ses_1', upl, join(dataDir, 'sessions', 'ses_1'))).rejects.toThrow('Access is denied');
    // Both are taken back (the build's removal fails again, the session folder's goes through).
    const sessionDir = join(dataDir, 'sessions', 'ses_1');
    expect(calls.slice(2).map((c) => [c[0], c[1]])).toEqual([[upl.dir, '/remove:g'], [sessionDir, '/remove:g']]);
    expect(accounts.inUse).toBe(1);
    expect(await accounts.grant('ses_2', undefined, join(dataDir, 'sessions', 'ses_2'))).toBeUndefined();

    failOn.clear();
    await accounts.revoke('ses_1');
    expect(accounts.inUse).toBe(0);
  });

  it('revokes from a folder that is gone without complaint', async () => {
    const accounts = new WindowsAppAccounts(dataDir, 1, icacls);
    const sessionDir = join(dataDir, 'sessions', 'ses_1');
    await accounts.grant('ses_1', undefined, sessionDir);
    rmSync(sessionDir, { recursive: true });
    failOn.add(sessionDir); // icacls on a missing path fails
    await accounts.revoke('ses_1');
    expect(accounts.inUse).toBe(0);
  });

  it("at start, removes every account's grants from each build and session folder a previous run left", async () => {
    mkdirSync(join(dataDir, 'sessions', 'ses_old'), { recursive: true });
    const accounts = new WindowsAppAccounts(dataDir, 2, icacls);
    await accounts.protectDataDir();
    expect(calls).toEqual([
      [join(dataDir, 'builds', 'upl_a'), '/remove:g', 'pixelfleet-app-1', 'pixelfleet-app-2'],
      [join(dataDir, 'sessions', 'ses_old'), '/remove:g', 'pixelfleet-app-1', 'pixelfleet-app-2'],
    ]);
  });
});
