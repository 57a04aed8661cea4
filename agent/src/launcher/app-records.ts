// The apps this agent launched, on disk (`<dataDir>/apps/<id>.json`, one small file per app,
// written atomically), so an agent that crashed finds them when it starts again. A record is
// written before the spawn (the app's environment carries its id, APP_RECORD_ENV), completed
// with the process's identity right after it, and removed once the agent has seen the app exit.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ATOMIC_TEMP_SUFFIX, syncFolder, writeJsonAtomic } from '../lib/atomic-file';
import { PROC_ROOT, readBootIdentity, readProcessExecutable, readProcessStat } from './process-identity';

/** The variable every launched app (and whatever it starts) carries: its record id, so its processes can be told from any other. */
export const APP_RECORD_ENV = 'PIXELFLEET_APP_RECORD';

/** Folder of the records, under the agent's data dir. */
export const APP_RECORDS_DIR = 'apps';

/** Who the spawned process is (POSIX), read from /proc right after the spawn. */
export interface RecordedProcess {
  pid: number;
  /** The process group the app leads (spawned detached: its own group, id = its pid). */
  pgid: number;
  /** /proc/<pid>/stat field 22, clock ticks since boot; undefined where /proc is not available. */
  startTicks: string | undefined;
  /** /proc/sys/kernel/random/boot_id of the boot it runs in. */
  bootId: string | undefined;
  /** /proc/stat btime, seconds since the epoch. */
  bootTimeS: number | undefined;
  /** /proc/<pid>/exe: the binary it runs. */
  exe: string | undefined;
}

export interface AppRecord {
  /** Random; the file name and the APP_RECORD_ENV value. */
  id: string;
  sessionId: string;
  /** The build's upload id; '' for a local build run by launcher.command. */
  uploadId: string;
  /** The app's program as the agent ran it (command[0]; on Windows the app's, not the job launcher's). */
  executable: string;
  /** The build folder the app runs from, when it runs a cached build (Windows: what the sweep searches). */
  buildDir: string | undefined;
  platform: NodeJS.Platform;
  /** Clock time the record was first written, ms since the epoch. */
  recordedAtMs: number;
  /** Absent while launching: the record is written before the spawn. */
  process: RecordedProcess | undefined;
  /**
   * Windows: the pid the agent spawned, the app-job launcher's (the app is its child), only as a
   * log field: nothing is signalled by it (no start time to prove it is still ours). The launcher's
   * job object ends the app tree when the agent dies; the sweep then looks in the build folder.
   */
  windowsPid: number | undefined;
}

const recordedProcess = z.object({
  pid: z.number().int().positive(),
  pgid: z.number().int().positive(),
  startTicks: z.string().regex(/^\d+$/).optional(),
  bootId: z.string().optional(),
  bootTimeS: z.number().int().optional(),
  exe: z.string().optional(),
});

const recordSchema = z.object({
  version: z.literal(1),
  id: z.string().uuid(),
  sessionId: z.string(),
  uploadId: z.string(),
  executable: z.string(),
  buildDir: z.string().optional(),
  platform: z.string(),
  recordedAtMs: z.number(),
  process: recordedProcess.optional(),
  windowsPid: z.number().int().positive().optional(),
});

/** A record file that could not be read: only its id (the file name) is known, which still finds the app's processes. */
export interface UnreadableRecord {
  id: string;
  problem: string;
}

export class AppRecordStore {
  readonly dir: string;

  constructor(dataDir: string) {
    this.dir = join(dataDir, APP_RECORDS_DIR);
  }

  /** A new record's id. */
  newId(): string {
    return randomUUID();
  }

  /** Writes (or replaces) a record: temp file, fsync, rename, fsync of the folder. */
  save(record: AppRecord): void {
    const { process: proc, buildDir, windowsPid, ...rest } = record;
    writeJsonAtomic(this.pathOf(record.id), {
      version: 1,
      ...rest,
      ...(buildDir === undefined ? {} : { buildDir }),
      ...(windowsPid === undefined ? {} : { windowsPid }),
      ...(proc === undefined ? {} : { process: withoutUndefined(proc) }),
    }, 0o644);
  }

  /** Removes a record; a missing one is not an error. */
  remove(id: string): void {
    rmSync(this.pathOf(id), { force: true });
    try {
      syncFolder(this.dir);
    } catch {
      // The folder is gone with the record: nothing left to make durable.
    }
  }

  /**
   * Every record on disk. Temp files a crashed write left behind are deleted, never read (the
   * record they would have replaced, if any, is still whole); a record that does not parse comes
   * back as unreadable, with its id.
   */
  load(): { records: AppRecord[]; unreadable: UnreadableRecord[] } {
    const records: AppRecord[] = [];
    const unreadable: UnreadableRecord[] = [];
    let names: string[];
    try {
      names = readdirSync(this.dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { records, unreadable };
      throw err;
    }
    for (const name of names) {
      if (name.endsWith(ATOMIC_TEMP_SUFFIX)) {
        rmSync(join(this.dir, name), { force: true });
        continue;
      }
      const id = /^([0-9a-f-]{36})\.json$/.exec(name)?.[1];
      if (id === undefined) continue;
      let parsed: ReturnType<typeof recordSchema.safeParse>;
      try {
        parsed = recordSchema.safeParse(JSON.parse(readFileSync(join(this.dir, name), 'utf8')));
      } catch (err) {
        unreadable.push({ id, problem: (err as Error).message });
        continue;
      }
      if (!parsed.success || parsed.data.id !== id) {
        unreadable.push({ id, problem: parsed.success ? 'the id inside does not match the file name' : (parsed.error.issues[0]?.message ?? 'invalid') });
        continue;
      }
      const { version: _version, ...r } = parsed.data;
      records.push({
        ...r,
        platform: r.platform as NodeJS.Platform,
        buildDir: r.buildDir,
        windowsPid: r.windowsPid,
        process: r.process && {
          pid: r.process.pid,
          pgid: r.process.pgid,
          startTicks: r.process.startTicks,
          bootId: r.process.bootId,
          bootTimeS: r.process.bootTimeS,
          exe: r.process.exe,
        },
      });
    }
    return { records, unreadable };
  }

  private pathOf(id: string): string {
    return join(this.dir, `${id}.json`);
  }
}

function withoutUndefined<T extends object>(value: T): Partial<T> {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * Who a just-spawned process is, for its record. Linux reads /proc (start time, group, binary,
 * boot); another POSIX system records the pid and group only, which the sweep cannot verify.
 */
export function identifyProcess(pid: number, platform: NodeJS.Platform, procRoot = PROC_ROOT): RecordedProcess {
  if (platform !== 'linux') return { pid, pgid: pid, startTicks: undefined, bootId: undefined, bootTimeS: undefined, exe: undefined };
  const stat = readProcessStat(pid, procRoot);
  const boot = readBootIdentity(procRoot);
  return { pid, pgid: stat?.pgid ?? pid, startTicks: stat?.startTicks, bootId: boot.bootId, bootTimeS: boot.bootTimeS, exe: readProcessExecutable(pid, procRoot) };
}
