// The repository's commands as real child processes (`pixelfleet`, `pixelfleet-agent`), their
// output collected and awaitable, with an environment free of the machine's PIXELFLEET_* settings.
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { join, resolve } from 'node:path';

export const REPO_ROOT = resolve(import.meta.dirname, '../..');
export const PIXELFLEET_BIN = join(REPO_ROOT, 'control-plane/bin/pixelfleet.mjs');
export const AGENT_BIN = join(REPO_ROOT, 'agent/bin/pixelfleet-agent.mjs');
/**
 * The one-file agent bundle `npm run build` writes (scripts/build.mjs `AGENT_BUNDLE`; the vitest
 * global setup keeps it fresh): what the Windows zip carries and the end-to-end tests run.
 */
export const AGENT_BUNDLE = join(REPO_ROOT, 'dist/agent.cjs');

export interface CliProcess {
  child: ChildProcessWithoutNullStreams;
  /** Resolves with the exit code (null after a signal). */
  exited: Promise<number | null>;
  /** Resolves with the first match in stdout or stderr (seen or future); rejects after timeoutMs. */
  output(match: RegExp, timeoutMs?: number): Promise<RegExpMatchArray>;
  stdout(): string;
  stderr(): string;
}

/** Environment without any PIXELFLEET_* variables from the machine running the tests. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('PIXELFLEET_')) env[k] = v;
  return { ...env, ...extra };
}

/** Starts `node <bin> <args>` from the repository root; the caller kills it (see `children`). */
export function startCli(bin: string, args: string[], env: NodeJS.ProcessEnv = cleanEnv()): CliProcess {
  const child = spawn(process.execPath, [bin, ...args], { env, cwd: REPO_ROOT });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const output = (match: RegExp, timeoutMs = 20_000) =>
    new Promise<RegExpMatchArray>((resolveMatch, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${match} in output within ${timeoutMs} ms:\n${stdout}\n${stderr}`)), timeoutMs);
      const check = () => {
        const m = stdout.match(match) ?? stderr.match(match);
        if (m) {
          clearTimeout(timer);
          resolveMatch(m);
        }
      };
      child.stdout.on('data', check);
      child.stderr.on('data', check);
      check();
    });
  return { child, exited, output, stdout: () => stdout, stderr: () => stderr };
}
