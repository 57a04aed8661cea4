// The owner listing of the service's folders: the command, the parse (fails closed) and the verdict.
import { describe, expect, it } from 'vitest';
import { foreignOwned, foreignOwnerMessage, ownerListingCommand, OwnerListingError, parentFolders, parseOwnerListing } from './folder-owners';

const INSTALLER = 'S-1-5-21-1004336348-1177238915-682003330-1001';
const listing = (...lines: string[]) => [`installer\t${INSTALLER}`, ...lines].join('\r\n') + '\r\n';

describe('parseOwnerListing', () => {
  it('reads the installer and one owner per item, names as Windows gives them', () => {
    expect(
      parseOwnerListing(
        '\uFEFF' +
          listing(
            'S-1-5-32-544\tBUILTIN\\Administrators\tC:\\ProgramData\\Pixelfleet\\agent',
            'S-1-5-80-1234-5678\tNT SERVICE\\pixelfleet-agent\tC:\\ProgramData\\Pixelfleet\\agent\\.data\\agent\\worker.json',
            'S-1-5-21-9-9-9-1105\t\tC:\\ProgramData\\Pixelfleet\\agent\\old.txt',
          ),
      ),
    ).toEqual({
      installerSid: INSTALLER,
      entries: [
        { sid: 'S-1-5-32-544', owner: 'BUILTIN\\Administrators', path: 'C:\\ProgramData\\Pixelfleet\\agent' },
        { sid: 'S-1-5-80-1234-5678', owner: 'NT SERVICE\\pixelfleet-agent', path: 'C:\\ProgramData\\Pixelfleet\\agent\\.data\\agent\\worker.json' },
        // An owner without a name (a deleted account) is shown by its SID.
        { sid: 'S-1-5-21-9-9-9-1105', owner: 'S-1-5-21-9-9-9-1105', path: 'C:\\ProgramData\\Pixelfleet\\agent\\old.txt' },
      ],
    });
  });

  it.each([
    ['no installer line (the script stopped early)', 'S-1-5-32-544\tBUILTIN\\Administrators\tC:\\x\n'],
    ['a line it does not know', listing('WARNING: something')],
    ['an owner that is not a SID', listing('BUILTIN\\Administrators\tBUILTIN\\Administrators\tC:\\x')],
    ['a line without a path', listing('S-1-5-18\tNT AUTHORITY\\SYSTEM\t')],
  ])('fails closed on %s', (_why, output) => {
    expect(() => parseOwnerListing(output)).toThrow(OwnerListingError);
  });
});

describe('foreignOwned', () => {
  const parsed = parseOwnerListing(
    listing(
      'S-1-5-18\tNT AUTHORITY\\SYSTEM\tC:\\',
      'S-1-5-32-544\tBUILTIN\\Administrators\tC:\\ProgramData',
      'S-1-5-19\tNT AUTHORITY\\LOCAL SERVICE\tC:\\s\\a',
      'S-1-5-20\tNT AUTHORITY\\NETWORK SERVICE\tC:\\s\\b',
      'S-1-5-80-956008885-3418522649-1831038044-1853292631-2271478464\tNT SERVICE\\TrustedInstaller\tC:\\s\\c',
      `${INSTALLER}\tWIN-GPU1\\admin\tC:\\s\\d`,
      'S-1-5-21-1-2-3-1107\tCORP\\gpu-agents$\tC:\\s\\e',
      'S-1-5-21-1004336348-1177238915-682003330-1002\tWIN-GPU1\\bob\tC:\\ProgramData\\Pixelfleet',
      'S-1-5-32-545\tBUILTIN\\Users\tC:\\s\\f',
    ),
  );

  it('keeps the items owned by anyone but SYSTEM, Administrators, service accounts, the installer and the named accounts', () => {
    expect(foreignOwned(parsed, ['corp\\GPU-agents$']).map((e) => e.owner)).toEqual(['WIN-GPU1\\bob', 'BUILTIN\\Users']);
    // A gMSA is trusted only when it is the service's account.
    expect(foreignOwned(parsed).map((e) => e.owner)).toEqual(['CORP\\gpu-agents$', 'WIN-GPU1\\bob', 'BUILTIN\\Users']);
  });

  it('explains the refusal and how to fix it', () => {
    expect(foreignOwnerMessage(foreignOwned(parsed, ['CORP\\gpu-agents$']))).toBe(
      [
        'refusing to install: these items are owned by an account that is not Administrators, SYSTEM or a service account:',
        '  C:\\ProgramData\\Pixelfleet (owner WIN-GPU1\\bob)',
        '  C:\\s\\f (owner BUILTIN\\Users)',
        'Its owner can change its access rules at any time, so the join and worker tokens would not be safe there.',
        'Check what is inside, then remove it, or give it to Administrators (takeown /f "C:\\ProgramData\\Pixelfleet" /r /a /d y, then icacls "C:\\ProgramData\\Pixelfleet" /reset /t /c), and run the install again.',
      ].join('\n'),
    );
    const many = Array.from({ length: 7 }, (_, i) => ({ sid: 'S-1-5-21-1-2-3-1002', owner: 'PC\\bob', path: `C:\\s\\f${i}` }));
    expect(foreignOwnerMessage(many)).toContain('  C:\\s\\f4 (owner PC\\bob)\n  … and 2 more\n');
  });
});

describe('ownerListingCommand and parentFolders', () => {
  it("runs app-job.exe's --owners (no PowerShell): parents listed alone, roots with what is inside, each path one argument", () => {
    expect(ownerListingCommand('C:\\pf\\app-job.exe', ["C:\\Program Data\\it's", 'D:\\data'], ['C:\\Program Data', 'C:\\'])).toEqual([
      'C:\\pf\\app-job.exe', '--owners', '--parent', 'C:\\Program Data', '--parent', 'C:\\', '--root', "C:\\Program Data\\it's", '--root', 'D:\\data',
    ]);
    expect(() => ownerListingCommand('a.exe', [], ['C:\\'])).toThrow(RangeError);
  });

  it('climbs to the drive root', () => {
    expect(parentFolders('C:\\ProgramData\\Pixelfleet\\agent')).toEqual(['C:\\ProgramData\\Pixelfleet', 'C:\\ProgramData', 'C:\\']);
    expect(parentFolders('D:\\pf')).toEqual(['D:\\']);
  });
});
