// What a new user types first, as real processes: --help and --version on every command and group
// of both CLIs (their own usage, the package's version, exit 0, nothing on stderr), and `pixelfleet
// serve` without a config file saying how to give one. The commands come from the CLIs' own tables,
// so a new command is walked here without anyone adding it.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { AGENT_BIN, cleanEnv, PIXELFLEET_BIN, REPO_ROOT, startCli } from '../support/cli-process';
import { NO_CONFIG_HINT } from '@pixelfleet/control-plane';
import { controlPlaneCommandWords } from '@pixelfleet/control-plane/test-support';
import { AGENT_CLI } from '@pixelfleet/agent/test-support';

const children: ChildProcessWithoutNullStreams[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** Runs the command to its end; `track` gets its process, to kill should the test end first (default: at afterEach). */
async function run(bin: string, args: string[], env = cleanEnv(), track = (child: ChildProcessWithoutNullStreams) => void children.push(child)) {
  const p = startCli(bin, args, env);
  track(p.child);
  // 'close' as well as the exit: on a busy machine the output can still be in the pipes when the process has exited.
  const [code] = await Promise.all([p.exited, once(p.child, 'close')]);
  return { code, stdout: p.stdout(), stderr: p.stderr() };
}

const packageVersion = (pkg: string) => (JSON.parse(readFileSync(join(REPO_ROOT, pkg, 'package.json'), 'utf8')) as { version: string }).version;

const PROGRAMS = [
  { name: 'pixelfleet', bin: PIXELFLEET_BIN, version: packageVersion('control-plane'), commands: controlPlaneCommandWords() },
  { name: 'pixelfleet-agent', bin: AGENT_BIN, version: packageVersion('agent'), commands: AGENT_CLI.commands.map((c) => [...c.words]) },
];
const CASES = PROGRAMS.flatMap((p) => p.commands.map((words) => ({ ...p, words, title: [p.name, ...words].join(' ') })));

/** More than the first line, where a command's help must say it. */
const HELP_SAYS: Record<string, RegExp> = {
  'pixelfleet serve': /69 a listener cannot open/,
  'pixelfleet admin events': /--from-start/,
  'pixelfleet admin backup': /--out FILE/,
  'pixelfleet-agent run': /77 enrollment refused/,
  'pixelfleet-agent service install': /--config <file>[\s\S]*--account <name>[\s\S]*--dry-run/,
};

describe('the commands walked', () => {
  it('are every command and group of both CLIs', () => {
    const titles = CASES.map((c) => c.title);
    expect(new Set(titles).size, 'each once').toBe(titles.length);
    // Known today; the tables may grow (each new entry is walked below), never lose these.
    expect(titles).toEqual(
      expect.arrayContaining([
        'pixelfleet',
        'pixelfleet serve',
        'pixelfleet admin',
        'pixelfleet admin user',
        'pixelfleet admin user create',
        'pixelfleet admin project subscription',
        'pixelfleet admin worker undrain',
        'pixelfleet admin session end',
        'pixelfleet admin events',
        'pixelfleet admin backup',
        'pixelfleet-agent',
        'pixelfleet-agent run',
        'pixelfleet-agent doctor',
        'pixelfleet-agent service',
        'pixelfleet-agent service install',
        'pixelfleet-agent service uninstall',
        'pixelfleet-agent service status',
      ]),
    );
    for (const title of Object.keys(HELP_SAYS)) expect(titles).toContain(title);
  });
});

// Each case spawns three processes (--help, --version, -v); vitest's maxConcurrency (5) bounds how many cases run at once.
describe.concurrent('--help, --version and -v', () => {
  it.for(CASES)('$title', { timeout: 60_000 }, async ({ bin, name, version, words, title }, { expect, onTestFinished }) => {
    // Its own processes only: afterEach would also kill those of the cases running beside it.
    const mine: ChildProcessWithoutNullStreams[] = [];
    onTestFinished(() => {
      for (const c of mine) if (c.exitCode === null) c.kill('SIGKILL');
    });
    const track = (child: ChildProcessWithoutNullStreams) => void mine.push(child);
    const [help, v, short] = await Promise.all([run(bin, [...words, '--help'], cleanEnv(), track), run(bin, [...words, '--version'], cleanEnv(), track), run(bin, [...words, '-v'], cleanEnv(), track)]);
    expect(help, `${title} --help`).toMatchObject({ code: 0, stderr: '' });
    // Its own usage: the first line names this command, not its group or the program.
    const firstLine = help.stdout.split('\n')[0]!;
    expect(`${firstLine} `, `${title} --help`).toMatch(new RegExp(`^Usage: ${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')} `));
    const says = HELP_SAYS[title];
    if (says !== undefined) expect(help.stdout).toMatch(says);
    expect(v, `${title} --version`).toEqual({ code: 0, stdout: `${name} ${version}\n`, stderr: '' });
    expect(short, `${title} -v`).toEqual(v);
  });
});

describe('pixelfleet serve without --config', () => {
  it('says how to give one, then starts on the defaults and the environment', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-noconfig-'));
    dirs.push(dir);
    const p = startCli(
      PIXELFLEET_BIN,
      ['serve'],
      cleanEnv({
        PIXELFLEET_ADMIN_TOKEN: 'noconfig-admin-token-0123456789abcdef',
        PIXELFLEET_AGENT_JOIN_TOKEN: 'noconfig-join-token-0123456789abcdef',
        PIXELFLEET_DATA_DIR: dir,
        PIXELFLEET_HTTP__PORT: '0',
        PIXELFLEET_GRPC__PORT: '0',
        PIXELFLEET_GEOIP__ENABLED: 'false',
      }),
    );
    children.push(p.child);
    await p.output(/pixelfleet control plane/);
    expect(p.stderr()).toBe(`${NO_CONFIG_HINT}\n`);
    expect(NO_CONFIG_HINT).toContain('--config <file>');
    expect(NO_CONFIG_HINT).toContain('PIXELFLEET_CONFIG');
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
  });

  it('without a file and without tokens: the hint, then the refusal naming the key (exit 78)', async () => {
    const r = await run(PIXELFLEET_BIN, ['serve']);
    expect(r.code).toBe(78);
    expect(r.stderr.split('\n')[0]).toBe(NO_CONFIG_HINT);
    expect(r.stderr).toContain('config key "adminToken"');
  });
});
