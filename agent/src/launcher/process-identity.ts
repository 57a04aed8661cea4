// Who a process is, from Linux's /proc: its start time (clock ticks since boot, /proc/<pid>/stat
// field 22, fixed at fork and kept across exec), its process group, its executable, and the boot
// it belongs to. A pid alone is not an identity: the kernel reuses pids, so a recorded app is
// only "still that app" when its start time and boot match.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

export interface ProcessStat {
  pid: number;
  /** One-letter state (R, S, D, Z, T…); Z: exited, waiting for its parent to reap it. */
  state: string;
  /** Process group id (field 5). */
  pgid: number;
  /** Start time in clock ticks since boot (field 22), as a decimal string (it can exceed 2^53 in theory). */
  startTicks: string;
}

export interface BootIdentity {
  /** /proc/sys/kernel/random/boot_id: changes on every boot. */
  bootId: string | undefined;
  /** `btime` from /proc/stat: boot time, seconds since the epoch. */
  bootTimeS: number | undefined;
}

/** Where /proc is (tests of the parsers pass a folder of their own). */
export const PROC_ROOT = '/proc';

function readIfPresent(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // ENOENT/ESRCH: the process is gone; EACCES: not ours to read. Either way: not known.
    if (code === 'ENOENT' || code === 'ESRCH' || code === 'EACCES' || code === 'EPERM') return undefined;
    throw err;
  }
}

/**
 * Parses /proc/<pid>/stat. The command name (field 2) is in parentheses and may itself contain
 * spaces and parentheses, so the fields are counted from the last `)`.
 */
export function parseProcStat(pid: number, text: string): ProcessStat | undefined {
  const close = text.lastIndexOf(')');
  if (close < 0) return undefined;
  const fields = text.slice(close + 2).trim().split(/\s+/);
  // fields[0] is field 3 (state); field n is fields[n - 3].
  const state = fields[0];
  const pgid = Number(fields[2]);
  const startTicks = fields[19];
  if (state === undefined || !Number.isSafeInteger(pgid) || startTicks === undefined || !/^\d+$/.test(startTicks)) return undefined;
  return { pid, state, pgid, startTicks };
}

/** The process's stat, or undefined when there is no such process (or /proc cannot tell). */
export function readProcessStat(pid: number, procRoot = PROC_ROOT): ProcessStat | undefined {
  const text = readIfPresent(join(procRoot, String(pid), 'stat'));
  return text === undefined ? undefined : parseProcStat(pid, text);
}

/** The running executable's path (/proc/<pid>/exe), without the ` (deleted)` mark of a replaced file; undefined when unreadable. */
export function readProcessExecutable(pid: number, procRoot = PROC_ROOT): string | undefined {
  try {
    return readlinkSync(join(procRoot, String(pid), 'exe')).replace(/ \(deleted\)$/, '');
  } catch {
    return undefined;
  }
}

/** True when the process's environment holds `name=value` exactly (false when unreadable). */
export function processHasEnv(pid: number, name: string, value: string, procRoot = PROC_ROOT): boolean {
  const environ = readIfPresent(join(procRoot, String(pid), 'environ'));
  if (environ === undefined) return false;
  return environ.split('\0').includes(`${name}=${value}`);
}

export function readBootIdentity(procRoot = PROC_ROOT): BootIdentity {
  const bootId = readIfPresent(join(procRoot, 'sys/kernel/random/boot_id'))?.trim();
  const btime = readIfPresent(join(procRoot, 'stat'))?.match(/^btime (\d+)$/m)?.[1];
  return { bootId: bootId === '' ? undefined : bootId, bootTimeS: btime === undefined ? undefined : Number(btime) };
}

/** Every live (not zombie) process /proc lists, with its stat. */
export function listProcesses(procRoot = PROC_ROOT): ProcessStat[] {
  const out: ProcessStat[] = [];
  for (const name of readdirSync(procRoot)) {
    if (!/^\d+$/.test(name)) continue;
    const stat = readProcessStat(Number(name), procRoot);
    if (stat !== undefined && stat.state !== 'Z') out.push(stat);
  }
  return out;
}

/** True when the pid names no process, or only a zombie (an exited process nobody has reaped yet). */
export function isProcessGone(pid: number, procRoot = PROC_ROOT): boolean {
  const stat = readProcessStat(pid, procRoot);
  return stat === undefined || stat.state === 'Z';
}
