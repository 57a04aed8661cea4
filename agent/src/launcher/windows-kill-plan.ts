// The commands that end an app's process tree on Windows, as argv arrays (pure, so they are
// tested on Linux). execa's kill() ends only the one process there and forceKillAfterDelay is a
// no-op; `taskkill /T` walks the tree by parent pid (agent-notes.md §4). The pid is the app-job
// launcher's (app-job.ts): the app is its child, and ending the launcher ends the app's job.

export interface WindowsKillPlan {
  /** Asks every process in the tree to close (WM_CLOSE); a windowless app may ignore it. */
  graceful: string[];
  /** Terminates every process in the tree. */
  forced: string[];
}

export function windowsKillPlan(pid: number): WindowsKillPlan {
  if (!Number.isSafeInteger(pid) || pid <= 0) throw new RangeError(`not a process id: ${pid}`);
  return {
    graceful: ['taskkill', '/PID', String(pid), '/T'],
    forced: ['taskkill', '/PID', String(pid), '/T', '/F'],
  };
}

/** Quotes text for a PowerShell single-quoted string: every single-quote character is doubled. */
function powerShellQuoted(text: string): string {
  return `'${text.replace(/['\u2018\u2019\u201a\u201b]/g, (q) => q + q)}'`;
}

/**
 * Force-stops every process whose executable lies under buildDir and prints the id of each one it
 * stopped, a line each: leftovers no job ended (an app whose launcher died before it was in its
 * job; one started without the launcher) and that `taskkill /T` cannot reach from a dead root.
 * Only safe when no other session runs from the same build.
 */
export function windowsSweepPlan(buildDir: string): string[] {
  if (!/^[A-Za-z]:\\|^\\\\/.test(buildDir) || /[\u0000-\u001f"]/.test(buildDir)) {
    throw new RangeError(`not an absolute Windows path: ${JSON.stringify(buildDir)}`);
  }
  const prefix = buildDir.endsWith('\\') ? buildDir : `${buildDir}\\`;
  const script =
    `$prefix = ${powerShellQuoted(prefix)}; ` +
    'Get-CimInstance Win32_Process | ' +
    'Where-Object { $_.ExecutablePath -and $_.ExecutablePath.StartsWith($prefix, [System.StringComparison]::OrdinalIgnoreCase) } | ' +
    'ForEach-Object { try { Stop-Process -Id $_.ProcessId -Force -ErrorAction Stop; $_.ProcessId } catch {} }';
  return ['powershell.exe', '-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-Command', script];
}
