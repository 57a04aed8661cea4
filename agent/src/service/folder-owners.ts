// Who owns the service's folders: the command that lists the owner of each folder the install
// uses (and everything in them, and their parents: the packaged app-job.exe's --owners, so no
// PowerShell is needed), the parse of its output, and the verdict. The owner of a file or folder
// may always change its access rules (WRITE_DAC), whatever they say, so a folder another user
// made under %ProgramData% (which lets Users create folders) stays theirs after icacls: the
// install refuses it instead of locking it and writing a secret there.
import { win32 } from 'node:path';

/** Owners that are not a person: SYSTEM, Administrators, LocalService, NetworkService. */
const TRUSTED_SIDS: ReadonlySet<string> = new Set(['S-1-5-18', 'S-1-5-32-544', 'S-1-5-19', 'S-1-5-20']);
/** Per-service SIDs (NT SERVICE\<name>, TrustedInstaller too): only an administrator makes a service. */
const SERVICE_SID_PREFIX = 'S-1-5-80-';
/** The listing's first line: `installer<TAB><SID of the account running the install>`. */
const INSTALLER_TAG = 'installer';

export interface OwnedEntry {
  /** The owner's SID (`S-1-5-32-544`). */
  sid: string;
  /** The owner as Windows names it (`BUILTIN\Administrators`), or the SID when it has no name. */
  owner: string;
  path: string;
}

export interface OwnerListing {
  /** SID of the account that ran the listing (the administrator installing: what it made is its own). */
  installerSid: string;
  entries: OwnedEntry[];
}

export class OwnerListingError extends Error {
  override readonly name = 'OwnerListingError';
}

/**
 * The command (appJob: the packaged app-job.exe) that prints the installer's SID, then one line
 * per item: the owner's SID, its name and the path, tab-separated (Windows forbids tabs and line
 * breaks in file names, so a planted name cannot forge a line). `parents` are listed alone,
 * `roots` with everything under them (a junction is listed, not entered). Any error (a path it
 * cannot read) ends it with a non-zero exit code (app-job.c, --owners).
 */
export function ownerListingCommand(appJob: string, roots: readonly string[], parents: readonly string[]): string[] {
  if (roots.length === 0) throw new RangeError('the owner listing needs at least one root');
  return [appJob, '--owners', ...parents.flatMap((p) => ['--parent', p]), ...roots.flatMap((r) => ['--root', r])];
}

/** The folders above `path` up to its drive root (`C:\ProgramData\Pixelfleet`, `C:\ProgramData`, `C:\`). */
export function parentFolders(path: string): string[] {
  const out: string[] = [];
  for (let p = win32.dirname(path); ; p = win32.dirname(p)) {
    out.push(p);
    if (win32.dirname(p) === p) return out;
  }
}

/**
 * Parses ownerListingCommand's output. Fails closed: a line it does not understand, or no
 * installer line, is an error rather than a listing that might miss an owner.
 * @throws OwnerListingError
 */
export function parseOwnerListing(output: string): OwnerListing {
  let installerSid: string | undefined;
  const entries: OwnedEntry[] = [];
  for (const raw of output.split(/\r?\n/)) {
    const line = raw.replace(/^\uFEFF/, '');
    if (line.trim() === '') continue;
    const fields = line.split('\t');
    if (fields.length === 2 && fields[0] === INSTALLER_TAG && /^S-1-[\d-]+$/.test(fields[1]!)) {
      installerSid = fields[1];
      continue;
    }
    if (fields.length !== 3 || !/^S-1-[\d-]+$/.test(fields[0]!) || fields[2] === '') {
      throw new OwnerListingError(`unexpected line in the owner listing: ${JSON.stringify(line)}`);
    }
    entries.push({ sid: fields[0]!, owner: fields[1] === '' ? fields[0]! : fields[1]!, path: fields[2]! });
  }
  if (installerSid === undefined) throw new OwnerListingError('the owner listing did not run to its end (no installer line)');
  return { installerSid, entries };
}

/**
 * The entries owned by someone who is not trusted: trusted are SYSTEM, Administrators, the
 * built-in and per-service accounts, the installer itself and `trustedAccounts` (the service's
 * gMSA, by name, case-insensitive).
 */
export function foreignOwned(listing: OwnerListing, trustedAccounts: readonly string[] = []): OwnedEntry[] {
  const names = new Set(trustedAccounts.map((a) => a.toLowerCase()));
  return listing.entries.filter(
    (e) => !TRUSTED_SIDS.has(e.sid) && !e.sid.startsWith(SERVICE_SID_PREFIX) && e.sid !== listing.installerSid && !names.has(e.owner.toLowerCase()),
  );
}

/** Why the install stops, and how to fix it, for foreignOwned's entries (at most 5 named). */
export function foreignOwnerMessage(foreign: readonly OwnedEntry[]): string {
  const shown = foreign.slice(0, 5).map((e) => `  ${e.path} (owner ${e.owner})`);
  const more = foreign.length > shown.length ? [`  … and ${foreign.length - shown.length} more`] : [];
  const first = foreign[0]?.path ?? '';
  return [
    `refusing to install: ${foreign.length === 1 ? 'this item is' : 'these items are'} owned by an account that is not Administrators, SYSTEM or a service account:`,
    ...shown,
    ...more,
    'Its owner can change its access rules at any time, so the join and worker tokens would not be safe there.',
    `Check what is inside, then remove it, or give it to Administrators (takeown /f "${first}" /r /a /d y, then icacls "${first}" /reset /t /c), and run the install again.`,
  ].join('\n');
}
