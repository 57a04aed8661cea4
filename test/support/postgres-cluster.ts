// A throwaway PostgreSQL cluster for tests: Debian's own binaries (initdb, pg_ctl, psql), run as
// the `postgres` OS user in a temp folder, on a free port of 127.0.0.1 with its socket in that
// folder. Never the system service: no /etc/postgresql, no /var/run/postgresql, no port 5432.
// Start one per test file (measured 1.2-2 s on two busy cores, stop 0.2 s) and give each test its
// own database, cloned from a migrated one with createDatabase({ template }) (50-200 ms for 30
// tables). .ci/run installs Debian's postgresql.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';

/** The superuser initdb creates; its password is random per cluster (scram-sha-256 over TCP). */
const SUPERUSER = 'postgres';
/** What a test's database may be called: unquoted-safe, so no name needs escaping. */
const DATABASE_NAME = /^[a-z_][a-z0-9_]{0,62}$/;

export interface PostgresCluster {
  /** `15`, `17`: the major version of the binaries in use. */
  readonly majorVersion: number;
  readonly port: number;
  /** The temp folder: data directory (`data/`), server log and the unix socket. */
  readonly dir: string;
  /** `postgres://postgres:<password>@127.0.0.1:<port>/<database>` (password auth over TCP, as in production). */
  url(database?: string): string;
  /**
   * Creates a database and returns its URL. `template` clones an existing database (a migrated
   * schema, say): PostgreSQL refuses while anyone is connected to the template, so close the pool
   * that filled it first. The name defaults to a fresh `t<n>`.
   */
  createDatabase(options?: { name?: string; template?: string }): Promise<string>;
  /** Drops a database, ending its connections first. */
  dropDatabase(name: string): Promise<void>;
  /** Runs SQL through psql over the unix socket as the superuser; returns its unaligned output (`|`-separated, one row a line). */
  psql(sql: string, database?: string): Promise<string>;
  /** The server's log so far (for failure messages). */
  log(): string;
  /** `pg_ctl stop -m immediate`, then removes the folder. Idempotent. */
  stop(): Promise<void>;
}

export interface PostgresClusterOptions {
  /** A database created at start (default `pixelfleet`); `url()` names it. */
  database?: string;
}

/**
 * The folder holding initdb, pg_ctl, postgres and psql of one version: the folder of the
 * `initdb` found on PATH (symlinks followed), else the highest `/usr/lib/postgresql/<v>/bin`.
 * Debian puts none of them on PATH (its /usr/bin/psql is a wrapper), hence the second search.
 */
export function postgresBinDir(): string {
  for (const folder of (process.env.PATH ?? '').split(delimiter)) {
    const initdb = join(folder, 'initdb');
    if (folder !== '' && existsSync(initdb)) {
      const dir = dirname(realpathSync(initdb));
      if (hasTools(dir)) return dir;
    }
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).filter((v) => /^\d+(\.\d+)?$/.test(v) && hasTools(join(root, v, 'bin'))) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  if (versions[0] === undefined) {
    throw new Error('PostgreSQL server binaries not found (initdb on PATH or /usr/lib/postgresql/<v>/bin): apt-get install postgresql; .ci/run does this');
  }
  return join(root, versions[0], 'bin');
}

function hasTools(dir: string): boolean {
  return ['initdb', 'pg_ctl', 'postgres', 'psql'].every((tool) => existsSync(join(dir, tool)));
}

/**
 * How server commands run: PostgreSQL refuses to run as root, so as root (CI, this machine) they
 * run as the `postgres` user through runuser; otherwise as the current user. Root inside a user
 * namespace (`unshare -r`, what run-isolated.mjs does for non-root users) maps no other user and
 * cannot switch: that is an error naming the way out.
 */
function serverUser(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const map = existsSync('/proc/self/uid_map') ? readFileSync('/proc/self/uid_map', 'utf8').trim().split(/\s+/) : ['0', '0'];
  if (map[0] !== '0' || map[1] !== '0') {
    throw new Error('PostgreSQL tests need the real root (to run the server as `postgres`) or a non-root user outside a user namespace; this is root inside `unshare -r`');
  }
  const id = (flag: string) => spawnSync('id', [flag, SUPERUSER], { encoding: 'utf8' });
  const uid = id('-u');
  const gid = id('-g');
  if (uid.status !== 0 || gid.status !== 0) throw new Error("there is no `postgres` OS user: apt-get install postgresql (Debian's package creates it)");
  return { uid: Number(uid.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/** The environment without PG* variables (a developer's PGHOST must not steer a test), messages in English. */
function cleanEnv(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { LC_ALL: 'C' };
  for (const [key, value] of Object.entries(process.env)) if (!key.startsWith('PG') && key !== 'LC_ALL') env[key] = value;
  return env;
}

/** Runs a program to its end; rejects with its output when it fails. */
function run(file: string, args: readonly string[], options: { cwd: string; input?: string }): Promise<string> {
  return new Promise((done, fail) => {
    const child = spawn(file, args, { cwd: options.cwd, env: cleanEnv(), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
    child.once('error', fail);
    child.once('close', (code) => {
      if (code === 0) done(stdout);
      else fail(new Error(`${[file, ...args].join(' ')} exited ${code}:\n${stderr}${stdout}`));
    });
    child.stdin.end(options.input ?? '');
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, '127.0.0.1', done));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

/** Clusters not stopped yet: stopped when the test process exits, so a forgotten stop() leaves no server behind. */
const running = new Map<string, () => void>();
let exitHookInstalled = false;

function stopAtExit(dir: string, stopNow: () => void): void {
  running.set(dir, stopNow);
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.once('exit', () => {
    for (const stop of running.values()) stop();
  });
}

/**
 * Starts a cluster: initdb (UTF8, C locale, no fsync of its files; scram-sha-256 over TCP, trust
 * on its own socket), then `pg_ctl start -w` on a free port with durability off (fsync,
 * synchronous_commit, full_page_writes: tests lose nothing to a crash they never survive), and
 * creates `options.database`. A port taken between choosing and binding is retried (3 tries).
 */
export async function startPostgresCluster(options: PostgresClusterOptions = {}): Promise<PostgresCluster> {
  const database = options.database ?? 'pixelfleet';
  if (!DATABASE_NAME.test(database)) throw new Error(`not a test database name: ${database}`);
  const bin = postgresBinDir();
  const tool = (name: string) => join(bin, name);
  const owner = serverUser();
  const asOwner = (file: string, args: readonly string[]): [string, string[]] =>
    owner === undefined ? [file, [...args]] : ['runuser', ['-u', SUPERUSER, '--', file, ...args]];
  const version = /\(PostgreSQL\) (\d+)/.exec(spawnSync(tool('pg_ctl'), ['--version'], { encoding: 'utf8' }).stdout);
  const majorVersion = Number(version?.[1] ?? Number.NaN);

  const dir = mkdtempSync(join(tmpdir(), 'pf-pg-'));
  const data = join(dir, 'data');
  const logFile = join(dir, 'server.log');
  const log = () => (existsSync(logFile) ? readFileSync(logFile, 'utf8') : '');
  let stopped: Promise<void> | undefined;
  const stopSync = () => {
    if (existsSync(join(data, 'postmaster.pid'))) {
      const [file, args] = asOwner(tool('pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w', '-t', '10']);
      spawnSync(file, args, { cwd: dir, env: cleanEnv(), stdio: 'ignore' });
    }
    rmSync(dir, { recursive: true, force: true });
    running.delete(dir);
  };
  stopAtExit(dir, stopSync);

  try {
    if (owner !== undefined) chownSync(dir, owner.uid, owner.gid);
    const password = randomBytes(18).toString('hex');
    const pwfile = join(dir, 'pwfile');
    writeFileSync(pwfile, `${password}\n`, { mode: 0o600 });
    if (owner !== undefined) chownSync(pwfile, owner.uid, owner.gid);
    await run(
      ...asOwner(tool('initdb'), ['-D', data, '-U', SUPERUSER, '--pwfile', pwfile, '-E', 'UTF8', '--locale=C', '--no-sync', '--auth-local=trust', '--auth-host=scram-sha-256']),
      { cwd: dir },
    );
    rmSync(pwfile);
    const settings = {
      listen_addresses: `'127.0.0.1'`,
      unix_socket_directories: `'${dir}'`,
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
      shared_buffers: `'32MB'`,
      max_connections: '60',
    };
    // Appended: a later line wins over initdb's defaults above it.
    writeFileSync(
      join(data, 'postgresql.conf'),
      Object.entries(settings)
        .map(([key, value]) => `${key} = ${value}\n`)
        .join(''),
      { flag: 'a' },
    );

    let port = 0;
    for (let attempt = 1; ; attempt += 1) {
      port = await freePort();
      try {
        await run(...asOwner(tool('pg_ctl'), ['start', '-D', data, '-l', logFile, '-w', '-t', '30', '-o', `-p ${port}`]), { cwd: dir });
        break;
      } catch (err) {
        if (attempt >= 3 || !/could not bind|Address already in use/.test(log())) throw err;
      }
    }

    const psql = (sql: string, db = database) =>
      run(tool('psql'), ['-X', '-q', '-A', '-t', '-v', 'ON_ERROR_STOP=1', '-h', dir, '-p', String(port), '-U', SUPERUSER, '-d', db, '-f', '-'], { cwd: dir, input: sql });
    const url = (db = database) => `postgres://${SUPERUSER}:${password}@127.0.0.1:${port}/${db}`;
    let databases = 0;
    const checkName = (name: string) => {
      if (!DATABASE_NAME.test(name)) throw new Error(`not a test database name: ${name}`);
      return name;
    };

    await psql(`CREATE DATABASE ${database}`, 'postgres');
    return {
      majorVersion,
      port,
      dir,
      url,
      async createDatabase(create = {}) {
        databases += 1;
        const name = checkName(create.name ?? `t${databases}`);
        const template = create.template === undefined ? '' : ` TEMPLATE ${checkName(create.template)}`;
        await psql(`CREATE DATABASE ${name}${template}`, 'postgres');
        return url(name);
      },
      async dropDatabase(name) {
        await psql(`DROP DATABASE IF EXISTS ${checkName(name)} WITH (FORCE)`, 'postgres');
      },
      psql,
      log,
      stop() {
        stopped ??= (async () => {
          try {
            // No pid file: the server is already gone (it died, or was killed by a test).
            if (existsSync(join(data, 'postmaster.pid'))) {
              await run(...asOwner(tool('pg_ctl'), ['stop', '-D', data, '-m', 'immediate', '-w', '-t', '10']), { cwd: dir });
            }
          } finally {
            rmSync(dir, { recursive: true, force: true });
            running.delete(dir);
          }
        })();
        return stopped;
      },
    };
  } catch (err) {
    const serverLog = log();
    stopSync();
    throw new Error(`PostgreSQL did not start: ${(err as Error).message}${serverLog === '' ? '' : `\n--- server log:\n${serverLog.slice(-3000)}`}`);
  }
}
