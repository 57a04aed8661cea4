// A process and its descendants, read from /proc (Linux): pid, parent and start time, so a pid
// the kernel has since given to another process is not mistaken for the one we saw.
import { readdirSync, readFileSync } from 'node:fs';

export interface ProcessEntry {
  pid: number;
  ppid: number;
  /** Field 22 of /proc/<pid>/stat: clock ticks after boot. */
  startTicks: string;
  command: string;
}

function readEntry(pid: number): ProcessEntry | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command (field 2) is in parentheses and may hold spaces; the fields after it are plain.
    const close = stat.lastIndexOf(')');
    const rest = stat.slice(close + 2).split(' ');
    const command = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0').join(' ').trim();
    // rest[0] is the state (field 3), rest[1] the parent (field 4), rest[19] the start time (field 22).
    if (rest[0] === 'Z') return undefined; // a zombie has exited; only its parent's wait is missing
    return { pid, ppid: Number(rest[1]), startTicks: rest[19] ?? '', command };
  } catch {
    return undefined; // gone while we looked
  }
}

function allProcesses(): ProcessEntry[] {
  return readdirSync('/proc')
    .filter((name) => /^\d+$/.test(name))
    .map((name) => readEntry(Number(name)))
    .filter((e): e is ProcessEntry => e !== undefined);
}

/** `root` and every process below it. */
export function processTree(root: number): ProcessEntry[] {
  const all = allProcesses();
  const tree = all.filter((p) => p.pid === root);
  for (let i = 0; i < tree.length; i += 1) for (const p of all) if (p.ppid === tree[i]!.pid) tree.push(p);
  return tree;
}

/** The entries of `seen` still running (same pid and start time). */
export function stillRunning(seen: readonly ProcessEntry[]): ProcessEntry[] {
  return seen.filter((p) => readEntry(p.pid)?.startTicks === p.startTicks);
}
