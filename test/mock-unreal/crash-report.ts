// What Unreal's crash handling leaves on disk, for the mock's crash mode: a folder
// `Saved/Crashes/UECC-<Platform>-<GUID>_0000/` holding CrashContext.runtime-xml (with the process
// id and command line of the run), a copy of the log so far, and a minidump.
import { randomBytes } from 'node:crypto';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const xmlEscape = (text: string): string => text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&apos;' })[c] ?? c);

export interface CrashReportInput {
  savedDir: string;
  projectName: string;
  commandLine: string;
  pid: number;
  errorMessage: string;
  /** The log written so far, copied in as `<Project>.log` (as the crash reporter copies it). */
  logPath: string;
}

/** Writes the crash folder synchronously (the process exits right after) and returns its path. */
export function writeCrashReport(input: CrashReportInput): string {
  const platform = process.platform === 'win32' ? 'Windows' : 'Linux';
  const guid = randomBytes(16).toString('hex').toUpperCase();
  const name = `UECC-${platform}-${guid}_0000`;
  const dir = join(input.savedDir, 'Crashes', name);
  mkdirSync(dir, { recursive: true });
  const context = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<FGenericCrashContext>',
    '\t<RuntimeProperties>',
    '\t\t<CrashVersion>3</CrashVersion>',
    `\t\t<ProcessId>${input.pid}</ProcessId>`,
    `\t\t<CrashGUID>${name}</CrashGUID>`,
    '\t\t<IsEnsure>false</IsEnsure>',
    '\t\t<CrashType>Crash</CrashType>',
    `\t\t<ErrorMessage>${xmlEscape(input.errorMessage)}</ErrorMessage>`,
    `\t\t<GameName>UE-${xmlEscape(input.projectName)}</GameName>`,
    `\t\t<ExecutableName>${xmlEscape(input.projectName)}</ExecutableName>`,
    `\t\t<CommandLine>${xmlEscape(input.commandLine)}</CommandLine>`,
    '\t\t<EngineVersion>5.5.0-0+MockUnreal</EngineVersion>',
    '\t</RuntimeProperties>',
    '</FGenericCrashContext>',
    '',
  ].join('\n');
  writeFileSync(join(dir, 'CrashContext.runtime-xml'), context);
  try {
    copyFileSync(input.logPath, join(dir, `${input.projectName}.log`));
  } catch {
    // No log to copy (a Shipping build without logging): the folder has the context and the dump.
  }
  writeFileSync(join(dir, 'UEMinidump.dmp'), Buffer.concat([Buffer.from('MDMP'), randomBytes(4092)]));
  return dir;
}
