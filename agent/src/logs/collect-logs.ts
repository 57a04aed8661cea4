// Decides which files of a finished session's app run are its logs: the -ABSLOG file and the
// captured output (both in the session's own folder, so certainly this run's), every crash folder
// under `<Project>/Saved/Crashes/` this run wrote, and `<Project>/Saved/Logs/*.log` written since
// the app started. Reads the disk, writes nothing; the spool copies what this names.
import type { Dirent } from 'node:fs';
import { readdir, readFile, stat } from 'node:fs/promises';
import { basename, join } from 'node:path';

/** Log files the control plane keeps per session (its MAX_LOG_FILES_PER_SESSION): more are not collected. */
export const MAX_SESSION_LOG_FILES = 8;

/**
 * A file counts as written since the start when its mtime is at most this much before it: file
 * systems that keep whole (ext3, HFS+) or even 2-second (FAT, exFAT) timestamps round down.
 */
export const MTIME_TOLERANCE_MS = 2_000;

/** The file Unreal's crash reporter writes into every crash folder: the process id and command line of the run that crashed. */
export const CRASH_CONTEXT_FILE = 'CrashContext.runtime-xml';

/** Where one session's logs may be, as the session runtime knew them when its app exited. */
export interface SessionLogSources {
  sessionId: string;
  /** When the app was launched, wall clock in ms (the agent's clock: systemClock in production). */
  startedAtMs: number;
  /** The -ABSLOG path (in the session folder); undefined when nothing was launched. */
  absLogPath: string | undefined;
  /** The captured stdout/stderr (in the session folder). */
  outputLogPath: string | undefined;
  /** `<build>/<Project>/Saved` of a cached build; undefined for a launcher.command stand-in without a build. */
  savedDir: string | undefined;
  /** The app's process id: a crash folder whose context names another process is another run's. */
  pid: number | undefined;
}

/** One log to spool: a file copied as it is, or a crash folder zipped into one file. */
export type CollectedLog =
  | { kind: 'file'; fileName: string; path: string; size: number; /** The agent's own copy in the session folder: removed once spooled. */ owned: boolean }
  | { kind: 'crash'; fileName: string; dir: string };

/** What the control plane accepts as a file name (log-uploads.ts SAFE_FILE_NAME). */
const SAFE_FILE_NAME = /^[A-Za-z0-9][A-Za-z0-9 ._()-]{0,199}$/;

/** A name the control plane accepts: other characters become `_`, a leading one that is not a letter or digit gets an `x`, at most 200 characters. */
export function safeLogFileName(name: string): string {
  let safe = name.replace(/[^A-Za-z0-9 ._()-]/g, '_');
  if (!/^[A-Za-z0-9]/.test(safe)) safe = `x${safe}`;
  safe = safe.slice(0, 200);
  return SAFE_FILE_NAME.test(safe) ? safe : 'log';
}

/** A regular non-empty file's size and mtime, or undefined (missing, empty, a folder). */
async function fileInfo(path: string): Promise<{ size: number; mtimeMs: number } | undefined> {
  const s = await stat(path).catch(() => undefined);
  if (s === undefined || !s.isFile() || s.size === 0) return undefined;
  return { size: s.size, mtimeMs: s.mtimeMs };
}

async function listDir(dir: string): Promise<Dirent[]> {
  return await readdir(dir, { withFileTypes: true }).catch(() => []);
}

/** The newest mtime of a folder and everything under it (a crash reporter may add files later). */
async function newestMtime(dir: string, depth = 0): Promise<number> {
  let newest = (await stat(dir)).mtimeMs;
  if (depth > 4) return newest;
  for (const entry of await listDir(dir)) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, await newestMtime(path, depth + 1));
    else if (entry.isFile()) newest = Math.max(newest, (await stat(path)).mtimeMs);
  }
  return newest;
}

const XML_ENTITIES: Record<string, string> = { '&amp;': '&', '&lt;': '<', '&gt;': '>', '&quot;': '"', '&apos;': "'" };
const xmlText = (xml: string, tag: string): string | undefined => {
  const m = new RegExp(`<${tag}>([^<]*)</${tag}>`).exec(xml);
  return m?.[1]?.replace(/&(amp|lt|gt|quot|apos);/g, (e) => XML_ENTITIES[e] ?? e);
};

/** A path as a command line may spell it: either slash, any case (Windows paths), no quotes. */
const pathForm = (path: string) => path.replaceAll('\\', '/').replaceAll('"', '').toLowerCase();

/**
 * Whose crash folder this is, from its CrashContext: 'ours' when it names our app's process id or
 * our -ABSLOG (unique to the session) in its command line; 'theirs' when it names another
 * process id we can compare (ours known) or another -ABSLOG; otherwise 'unknown' (then its mtime
 * decides), e.g. under the Windows app-job launcher, which never learns the app's pid.
 */
async function crashOwner(dir: string, s: SessionLogSources): Promise<'ours' | 'theirs' | 'unknown'> {
  const xml = await readFile(join(dir, CRASH_CONTEXT_FILE), 'utf8').catch(() => undefined);
  if (xml === undefined) return 'unknown';
  const pid = xmlText(xml, 'ProcessId');
  const commandLine = xmlText(xml, 'CommandLine');
  if (s.pid !== undefined && pid !== undefined && Number(pid) === s.pid) return 'ours';
  const line = commandLine === undefined ? undefined : pathForm(commandLine);
  if (s.absLogPath !== undefined && line?.includes(pathForm(s.absLogPath)) === true) return 'ours';
  if (s.pid !== undefined && pid !== undefined) return 'theirs';
  if (line !== undefined && /(^|\s)-abslog=/.test(line)) return 'theirs';
  return 'unknown';
}

/**
 * The session's logs, in upload order: the -ABSLOG file, crash folders (oldest first), the
 * captured output, then other `Saved/Logs/*.log` files; at most MAX_SESSION_LOG_FILES (the rest
 * are reported in `skipped`). Missing and empty files are no log: a Shipping build without
 * logging, or an app that never started, yields an empty list.
 *
 * Another session of the same build may run beside this one: its -ABSLOG is in its own session
 * folder, a crash folder is claimed by its CrashContext (process id or -ABSLOG), and only a
 * `Saved/Logs` file or a crash folder without a context is judged by its mtime alone.
 */
export async function collectSessionLogs(s: SessionLogSources): Promise<{ logs: CollectedLog[]; skipped: string[] }> {
  const since = s.startedAtMs - MTIME_TOLERANCE_MS;
  const logs: CollectedLog[] = [];
  const names = new Set<string>();
  const uniqueName = (wanted: string, prefix: string): string => {
    let name = safeLogFileName(wanted);
    if (names.has(name)) name = safeLogFileName(`${prefix}-${wanted}`);
    for (let i = 2; names.has(name); i++) name = safeLogFileName(`${prefix}-${i}-${wanted}`);
    names.add(name);
    return name;
  };

  if (s.absLogPath !== undefined) {
    const info = await fileInfo(s.absLogPath);
    if (info) logs.push({ kind: 'file', fileName: uniqueName(basename(s.absLogPath), 'Engine'), path: s.absLogPath, size: info.size, owned: true });
  }

  if (s.savedDir !== undefined) {
    const crashesDir = join(s.savedDir, 'Crashes');
    const crashes: { dir: string; name: string; mtimeMs: number }[] = [];
    for (const entry of await listDir(crashesDir)) {
      if (!entry.isDirectory()) continue;
      const dir = join(crashesDir, entry.name);
      const mtimeMs = await newestMtime(dir).catch(() => 0);
      if (mtimeMs < since) continue;
      if ((await crashOwner(dir, s)) === 'theirs') continue;
      crashes.push({ dir, name: entry.name, mtimeMs });
    }
    crashes.sort((a, b) => a.mtimeMs - b.mtimeMs || a.name.localeCompare(b.name));
    for (const c of crashes) logs.push({ kind: 'crash', fileName: uniqueName(`Crash-${c.name}.zip`, 'Saved'), dir: c.dir });
  }

  if (s.outputLogPath !== undefined) {
    const info = await fileInfo(s.outputLogPath);
    if (info) logs.push({ kind: 'file', fileName: uniqueName(basename(s.outputLogPath), 'Agent'), path: s.outputLogPath, size: info.size, owned: true });
  }

  if (s.savedDir !== undefined) {
    const logsDir = join(s.savedDir, 'Logs');
    const found: { path: string; name: string; size: number; mtimeMs: number }[] = [];
    for (const entry of await listDir(logsDir)) {
      if (!entry.isFile() || !entry.name.toLowerCase().endsWith('.log')) continue;
      const path = join(logsDir, entry.name);
      if (path === s.absLogPath) continue;
      const info = await fileInfo(path);
      if (info && info.mtimeMs >= since) found.push({ path, name: entry.name, ...info });
    }
    found.sort((a, b) => a.mtimeMs - b.mtimeMs || a.name.localeCompare(b.name));
    for (const f of found) logs.push({ kind: 'file', fileName: uniqueName(f.name, 'Saved'), path: f.path, size: f.size, owned: false });
  }

  const skipped = logs.splice(MAX_SESSION_LOG_FILES).map((l) => (l.kind === 'file' ? l.path : l.dir));
  return { logs, skipped };
}
