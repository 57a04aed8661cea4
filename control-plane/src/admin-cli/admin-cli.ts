// `pixelfleet admin …`: operators' commands over gRPC AdminService. Human-readable output by
// default, --json for scripts. Server and token come from --server/--token or
// PIXELFLEET_ADMIN_SERVER/PIXELFLEET_ADMIN_TOKEN. Exit codes: 0 ok, 1 the server refused, 2 usage.
import { parseArgs } from 'node:util';
import { status as grpcStatus, type ServiceError } from '@grpc/grpc-js';
import { adminV1 } from '@pixelfleet/proto';
import { describeTlsFailure, TlsFileError, type ClientTlsSettings } from '@pixelfleet/common';
import { AdminClient } from './admin-client';
import { renderFields, renderTable } from './table';
import { ACTIVE_SUBSCRIPTION, SUBSCRIPTION_STATUSES } from '../auth/project-access';
import { CONTROL_PLANE_VERSION } from '../lib/version';
import { createHash } from 'node:crypto';
import { open, rename, rm } from 'node:fs/promises';

export interface CliIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Resolves when the user interrupts a following command (`events`); defaults to SIGINT. */
  interrupted?: Promise<void>;
}

class UsageError extends Error {}

/**
 * Each command: its words, its arguments, what it does. The usage text, each command's --help and
 * the dispatch come from here (the dispatch's switch must have a case for each name, and only those).
 */
const COMMANDS = [
  ['user create', '--email E', 'adds a user account'],
  ['key issue', '--user U', "issues the user's API key (revokes the user's previous key at once)"],
  ['project create', '--owner U --name N --region us-east-1|europe|asia-pacific', 'adds a project'],
  ['project subscription', `--project P --status ${SUBSCRIPTION_STATUSES.join('|')}`, `sets the subscription status (${ACTIVE_SUBSCRIPTION} allows writes)`],
  ['project stats', '--project P', 'live and queued viewers'],
  ['member add', '--project P --user U --access FULL|READONLY', 'gives a user access to a project'],
  ['member remove', '--project P --user U', "takes a user's access away"],
  ['workers', '', 'lists the workers'],
  ['worker drain', '--worker W', 'stops placing sessions on a worker'],
  ['worker undrain', '--worker W', 'puts a drained worker back in service'],
  ['worker move', '--worker W --region us-east-1|europe|asia-pacific', "moves a worker to another region (its sessions end; its agent's region must then name the new one)"],
  ['worker remove', '--worker W', "revokes a worker's token, ends its stream and sessions, and forgets it (it must enroll again)"],
  ['sessions', '[--project P] [--limit N]', 'lists sessions, newest first'],
  ['session end', '--session S', 'ends a session'],
  ['builds', '--project P', "lists a project's builds"],
  ['events', '[--after ID | --from-start]', 'follows new events until interrupted; --after replays those after ID, --from-start all'],
  ['backup', '--out FILE', 'writes a consistent copy of the database (SQLite online backup, taken while serving)'],
] as const satisfies ReadonlyArray<readonly [name: string, args: string, about: string]>;

type AdminCommand = (typeof COMMANDS)[number][0];

function isAdminCommand(words: string): words is AdminCommand {
  return COMMANDS.some(([name]) => name === words);
}

/**
 * The words of every admin command (`['user', 'create']`) and of every group that leads to some
 * (`['user']`): each answers --help with its own usage and --version.
 */
export function adminCommandWords(): string[][] {
  const names = COMMANDS.map(([name]): string => name);
  const groups = names.filter((n) => n.includes(' ')).map((n) => n.split(' ')[0]!);
  return [...new Set([...groups, ...names])].map((n) => n.split(' '));
}

const COMMON_OPTIONS = `Options: --json (one JSON document), --server host:port, --token T (or PIXELFLEET_ADMIN_SERVER/PIXELFLEET_ADMIN_TOKEN), --help, --version.
`;

export const ADMIN_USAGE = `Usage: pixelfleet admin <command> [options] [--json] [--server host:port] [--token T]

Commands:
${COMMANDS.map(([name, args, about]) => `  ${`${name} ${args}`.trimEnd().padEnd(60)} ${about}`).join('\n')}

Server and token: --server/--token, or PIXELFLEET_ADMIN_SERVER/PIXELFLEET_ADMIN_TOKEN.
TLS (on unless the server is a loopback address and no TLS option is given):
  --ca <file>            CA (PEM) that signed the server's certificate (default: the system roots)
  --server-name <name>   the name the certificate must carry (default: the --server host)
  --cert <file> --key <file>   client certificate for a server requiring mutual TLS
  --tls / --insecure     force TLS (system roots) / plaintext
  or PIXELFLEET_ADMIN_CA, PIXELFLEET_ADMIN_SERVER_NAME, PIXELFLEET_ADMIN_CERT, PIXELFLEET_ADMIN_KEY.
`;

/** `pixelfleet admin <words> --help`: the commands starting with those words, or undefined if none does. */
function commandHelp(words: readonly string[]): string | undefined {
  const prefix = words.join(' ');
  const matching = COMMANDS.filter(([name]) => name === prefix || name.startsWith(`${prefix} `));
  if (matching.length === 0) return undefined;
  return `${matching.map(([name, args, about]) => `Usage: pixelfleet admin ${`${name} ${args}`.trimEnd()}\n  ${about}\n`).join('')}${COMMON_OPTIONS}`;
}

const iso = (d: Date | undefined) => (d === undefined ? null : d.toISOString());

const workerJson = (w: adminV1.Worker) => ({
  workerId: w.workerId,
  hostname: w.hostname,
  region: w.region,
  status: w.status,
  link: w.link,
  draining: w.draining,
  slots: w.slots,
  usedSlots: w.usedSlots,
  agentVersion: w.agentVersion,
  lastSeenAt: iso(w.lastSeenAt),
  leaseExpiresAt: iso(w.leaseExpiresAt),
  enrolledAt: iso(w.enrolledAt),
});

const sessionJson = (s: adminV1.Session) => ({
  sessionId: s.sessionId,
  projectId: s.projectId,
  status: s.status,
  region: s.region,
  assignedWorker: s.assignedWorker === '' ? null : s.assignedWorker,
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
  endReason: s.endReason === '' ? null : s.endReason,
});

const buildJson = (b: adminV1.Build) => ({
  uploadId: b.uploadId,
  projectId: b.projectId,
  fileUrl: b.fileUrl === '' ? null : b.fileUrl,
  status: b.status,
  objection: b.objection === '' ? null : b.objection,
  autoRelease: b.autoRelease,
  live: b.live,
  createdAt: iso(b.createdAt),
  updatedAt: iso(b.updatedAt),
  progress:
    b.progress === undefined
      ? null
      : {
          bytes: b.progress.bytes,
          totalBytes: b.progress.totalBytes === 0 ? null : b.progress.totalBytes,
          bytesPerSecond: b.progress.bytesPerSecond === 0 ? null : b.progress.bytesPerSecond,
          etaSeconds: b.progress.etaSeconds === 0 ? null : b.progress.etaSeconds,
        },
  archiveSha256: b.archiveSha256 === '' ? null : b.archiveSha256,
  archiveBytes: b.archiveSha256 === '' ? null : b.archiveBytes,
});

const MIB = 1024 * 1024;

/** `412 / 2,048 MiB, 96.3 MiB/s, 17 s left` for a build the pipeline is working on; `-` otherwise. */
function progressText(p: adminV1.BuildProgress | undefined): string {
  if (p === undefined) return '-';
  const mib = (n: number) => (n / MIB).toLocaleString('en-US', { maximumFractionDigits: 0 });
  const parts = [p.totalBytes > 0 ? `${mib(p.bytes)} / ${mib(p.totalBytes)} MiB` : `${mib(p.bytes)} MiB`];
  if (p.bytesPerSecond > 0) parts.push(`${(p.bytesPerSecond / MIB).toFixed(1)} MiB/s`);
  if (p.etaSeconds > 0) parts.push(`${p.etaSeconds} s left`);
  return parts.join(', ');
}

const eventJson = (e: adminV1.Event) => ({
  eventId: e.eventId,
  type: e.type,
  occurredAt: iso(e.occurredAt),
  workerId: e.workerId === '' ? null : e.workerId,
  sessionId: e.sessionId === '' ? null : e.sessionId,
  projectId: e.projectId === '' ? null : e.projectId,
  data: JSON.parse(e.dataJson || '{}') as unknown,
});

const ACCESS: Record<string, adminV1.MemberAccess> = {
  FULL: adminV1.MemberAccess.MEMBER_ACCESS_FULL,
  READONLY: adminV1.MemberAccess.MEMBER_ACCESS_READONLY,
};

/** Runs one admin command; returns the process exit code. */
export async function runAdminCli(argv: readonly string[], io: CliIo): Promise<number> {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      allowPositionals: true,
      strict: true,
      options: {
        json: { type: 'boolean', default: false },
        server: { type: 'string' },
        token: { type: 'string' },
        ca: { type: 'string' },
        'server-name': { type: 'string' },
        cert: { type: 'string' },
        key: { type: 'string' },
        tls: { type: 'boolean' },
        insecure: { type: 'boolean' },
        email: { type: 'string' },
        user: { type: 'string' },
        owner: { type: 'string' },
        name: { type: 'string' },
        region: { type: 'string' },
        project: { type: 'string' },
        access: { type: 'string' },
        status: { type: 'string' },
        worker: { type: 'string' },
        session: { type: 'string' },
        limit: { type: 'string' },
        after: { type: 'string' },
        'from-start': { type: 'boolean', default: false },
        out: { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
        version: { type: 'boolean', short: 'v', default: false },
      },
    });
  } catch (err) {
    io.stderr(`error: ${(err as Error).message}\n\n${ADMIN_USAGE}`);
    return 2;
  }
  const { values: v, positionals } = parsed;
  if (v.version) {
    io.stdout(`pixelfleet ${CONTROL_PLANE_VERSION}\n`);
    return 0;
  }
  if (v.help && positionals.length > 0) {
    const help = commandHelp(positionals);
    if (help === undefined) {
      io.stderr(`error: unknown command "${positionals.join(' ')}"\n\n${ADMIN_USAGE}`);
      return 2;
    }
    io.stdout(help);
    return 0;
  }
  if (v.help || positionals.length === 0) {
    (v.help ? io.stdout : io.stderr)(ADMIN_USAGE);
    return v.help ? 0 : 2;
  }
  const server = v.server ?? io.env.PIXELFLEET_ADMIN_SERVER;
  const token = v.token ?? io.env.PIXELFLEET_ADMIN_TOKEN;
  if (!server || !token) {
    io.stderr('error: the server and admin token are required (--server/--token or PIXELFLEET_ADMIN_SERVER/PIXELFLEET_ADMIN_TOKEN)\n');
    return 2;
  }

  const need = (name: keyof typeof v): string => {
    const value = v[name];
    if (typeof value !== 'string' || value === '') throw new UsageError(`--${name} is required for "${positionals.join(' ')}"`);
    return value;
  };
  const print = (json: unknown, human: string) => io.stdout(v.json ? `${JSON.stringify(json)}\n` : human);

  if (v.tls && v.insecure) {
    io.stderr(`error: --tls and --insecure contradict each other\n\n${ADMIN_USAGE}`);
    return 2;
  }
  const tls: ClientTlsSettings = {
    caFile: v.ca ?? io.env.PIXELFLEET_ADMIN_CA,
    serverName: v['server-name'] ?? io.env.PIXELFLEET_ADMIN_SERVER_NAME,
    certFile: v.cert ?? io.env.PIXELFLEET_ADMIN_CERT,
    keyFile: v.key ?? io.env.PIXELFLEET_ADMIN_KEY,
    insecure: v.insecure ? true : v.tls ? false : undefined,
  };
  let client: AdminClient;
  try {
    client = new AdminClient(server, token, tls);
  } catch (err) {
    if (!(err instanceof TlsFileError)) throw err;
    io.stderr(`error: ${err.message}\n`);
    return 2;
  }
  try {
    const command = positionals.join(' ');
    if (!isAdminCommand(command)) throw new UsageError(`unknown command "${command}"`);
    switch (command) {
      case 'user create': {
        const r = await client.call<adminV1.CreateUserResponse>((c, md, o, cb) => c.createUser({ email: need('email') }, md, o, cb));
        print({ userId: r.userId }, renderFields({ userId: r.userId }));
        break;
      }
      case 'key issue': {
        const r = await client.call<adminV1.IssueKeyResponse>((c, md, o, cb) => c.issueKey({ userId: need('user') }, md, o, cb));
        print({ apiKey: r.apiKey }, renderFields({ apiKey: r.apiKey }) + 'Store this key now: it is not shown again. The previous key no longer works.\n');
        break;
      }
      case 'project create': {
        const r = await client.call<adminV1.CreateProjectResponse>((c, md, o, cb) => c.createProject({ ownerUserId: need('owner'), name: need('name'), region: need('region') }, md, o, cb));
        print({ projectId: r.projectId }, renderFields({ projectId: r.projectId }));
        break;
      }
      case 'project subscription': {
        const projectId = need('project');
        const status = need('status');
        if (!SUBSCRIPTION_STATUSES.includes(status)) throw new UsageError(`--status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}`);
        await client.call<adminV1.SetSubscriptionStatusResponse>((c, md, o, cb) => c.setSubscriptionStatus({ projectId, status }, md, o, cb));
        print({ projectId, subscriptionStatus: status }, renderFields({ projectId, subscriptionStatus: status }));
        break;
      }
      case 'project stats': {
        const projectId = need('project');
        const r = await client.call<adminV1.GetProjectStatsResponse>((c, md, o, cb) => c.getProjectStats({ projectId }, md, o, cb));
        print({ projectId, liveUser: r.liveUser, queueUser: r.queueUser }, renderFields({ projectId, liveUser: r.liveUser, queueUser: r.queueUser }));
        break;
      }
      case 'member add': {
        const projectId = need('project');
        const userId = need('user');
        const accessName = need('access');
        const access = ACCESS[accessName];
        if (access === undefined) throw new UsageError('--access must be FULL or READONLY');
        await client.call<adminV1.AddMemberResponse>((c, md, o, cb) => c.addMember({ projectId, userId, access }, md, o, cb));
        print({ projectId, userId, access: accessName }, renderFields({ projectId, userId, access: accessName }));
        break;
      }
      case 'member remove': {
        const projectId = need('project');
        const userId = need('user');
        const r = await client.call<adminV1.RemoveMemberResponse>((c, md, o, cb) => c.removeMember({ projectId, userId }, md, o, cb));
        print({ projectId, userId, removed: r.removed }, r.removed ? `Removed ${userId} from ${projectId}\n` : `${userId} was not a member of ${projectId}\n`);
        break;
      }
      case 'workers': {
        const r = await client.call<adminV1.ListWorkersResponse>((c, md, o, cb) => c.listWorkers({}, md, o, cb));
        print(
          { workers: r.workers.map(workerJson) },
          renderTable(
            ['WORKER', 'HOSTNAME', 'REGION', 'STATUS', 'LINK', 'SLOTS', 'AGENT', 'LAST SEEN'],
            r.workers.map((w) => [w.workerId, w.hostname, w.region, w.status, w.link, `${w.usedSlots}/${w.slots}`, w.agentVersion, iso(w.lastSeenAt) ?? 'never']),
          ),
        );
        break;
      }
      case 'worker drain':
      case 'worker undrain': {
        const workerId = need('worker');
        const r = command === 'worker drain' ? await client.call<adminV1.DrainWorkerResponse>((c, md, o, cb) => c.drainWorker({ workerId }, md, o, cb)) : await client.call<adminV1.UndrainWorkerResponse>((c, md, o, cb) => c.undrainWorker({ workerId }, md, o, cb));
        const w = r.worker!;
        print(workerJson(w), renderFields({ workerId: w.workerId, status: w.status, link: w.link, draining: w.draining }));
        break;
      }
      case 'worker move': {
        const workerId = need('worker');
        const region = need('region');
        const r = await client.call<adminV1.MoveWorkerResponse>((c, md, o, cb) => c.moveWorker({ workerId, region }, md, o, cb));
        const w = r.worker!;
        print({ ...workerJson(w), endedSessions: r.endedSessions }, renderFields({ workerId: w.workerId, region: w.region, status: w.status, endedSessions: r.endedSessions }));
        break;
      }
      case 'worker remove': {
        const workerId = need('worker');
        const r = await client.call<adminV1.RemoveWorkerResponse>((c, md, o, cb) => c.removeWorker({ workerId }, md, o, cb));
        const w = r.worker!;
        print({ ...workerJson(w), endedSessions: r.endedSessions }, renderFields({ workerId: w.workerId, hostname: w.hostname, status: w.status, endedSessions: r.endedSessions }));
        break;
      }
      case 'sessions': {
        const limit = v.limit === undefined ? 0 : Number(v.limit);
        if (!Number.isInteger(limit) || limit < 0) throw new UsageError('--limit must be a whole number');
        const r = await client.call<adminV1.ListSessionsResponse>((c, md, o, cb) => c.listSessions({ projectId: v.project ?? '', limit }, md, o, cb));
        print(
          { sessions: r.sessions.map(sessionJson) },
          renderTable(
            ['SESSION', 'PROJECT', 'STATUS', 'REGION', 'WORKER', 'CREATED', 'END REASON'],
            r.sessions.map((s) => [s.sessionId, s.projectId, s.status, s.region, s.assignedWorker || '-', iso(s.createdAt) ?? '', s.endReason || '-']),
          ),
        );
        break;
      }
      case 'session end': {
        const r = await client.call<adminV1.EndSessionResponse>((c, md, o, cb) => c.endSession({ sessionId: need('session') }, md, o, cb));
        const s = r.session!;
        print(sessionJson(s), renderFields({ sessionId: s.sessionId, status: s.status, endReason: s.endReason || '-' }));
        break;
      }
      case 'builds': {
        const r = await client.call<adminV1.ListBuildsResponse>((c, md, o, cb) => c.listBuilds({ projectId: need('project') }, md, o, cb));
        print(
          { builds: r.builds.map(buildJson) },
          renderTable(
            ['UPLOAD', 'STATUS', 'PROGRESS', 'LIVE', 'AUTO RELEASE', 'CREATED', 'OBJECTION'],
            r.builds.map((b) => [b.uploadId, b.status, progressText(b.progress), b.live ? 'yes' : 'no', b.autoRelease ? 'yes' : 'no', iso(b.createdAt) ?? '', b.objection || '-']),
          ),
        );
        break;
      }
      case 'events':
        if (v['from-start'] && v.after !== undefined) throw new UsageError('--after and --from-start exclude each other');
        return await followEvents(client, v['from-start'] ? 'first' : parseAfter(v.after), v.json, io);
      case 'backup': {
        const out = need('out');
        let r;
        try {
          r = await withInterruption(io, (interrupted) => writeBackup(client, out, interrupted));
        } catch (err) {
          io.stderr(`error: ${describeGrpcError(err, client.channel)}; no backup was written to ${out}\n`);
          return 1;
        }
        if (r === 'interrupted') {
          io.stderr(`error: interrupted; no backup was written to ${out}\n`);
          return INTERRUPTED_EXIT_CODE;
        }
        print({ out, bytes: r.bytes, sha256: r.sha256 }, `Backup written to ${out} (${r.bytes} bytes, sha256 ${r.sha256}).\nRestore: stop the control plane, copy it to <dataDir>/pixelfleet.sqlite, remove any pixelfleet.sqlite-wal and -shm beside it, start.\n`);
        break;
      }
      default: {
        const unhandled: never = command;
        throw new Error(`admin command "${String(unhandled)}" has no case`);
      }
    }
    return 0;
  } catch (err) {
    if (err instanceof UsageError) {
      io.stderr(`error: ${err.message}\n\n${ADMIN_USAGE}`);
      return 2;
    }
    io.stderr(`error: ${describeGrpcError(err, client.channel)}\n`);
    return 1;
  } finally {
    client.close();
  }
}

/** Exit code of a command stopped by Ctrl-C (128 + SIGINT, as shells report it). */
const INTERRUPTED_EXIT_CODE = 130;

/**
 * Runs `work` with a signal that aborts when the user interrupts (io.interrupted, else SIGINT,
 * listened for only while it runs); 'interrupted' if that is how it ended.
 */
async function withInterruption<T>(io: CliIo, work: (interrupted: AbortSignal) => Promise<T>): Promise<T | 'interrupted'> {
  const controller = new AbortController();
  const interrupt = () => controller.abort();
  if (io.interrupted) void io.interrupted.then(interrupt);
  else process.once('SIGINT', interrupt);
  try {
    return await work(controller.signal);
  } catch (err) {
    if (controller.signal.aborted) return 'interrupted';
    throw err;
  } finally {
    process.off('SIGINT', interrupt);
  }
}

/**
 * Receives the database copy into `<out>.part` (mode 0600: it holds every secret's digest), checks
 * its size and SHA-256 against the server's, syncs it to disk and renames it to `out`; on any
 * failure the part file is removed and `out` is left as it was.
 */
async function writeBackup(client: AdminClient, out: string, interrupted: AbortSignal): Promise<{ bytes: number; sha256: string }> {
  const part = `${out}.part`;
  // A fresh file, never one that was there ('wx' after removing it): a planted link or a
  // world-readable file named like the part would otherwise receive every secret's digest.
  await rm(part, { force: true });
  const file = await open(part, 'wx', 0o600);
  let closed = false;
  try {
    const hash = createHash('sha256');
    let bytes = 0;
    let trailer: adminV1.BackupResponse | undefined;
    const stream = client.backup();
    // Ctrl-C: the call is cancelled (the server removes its copy) and the part file goes below.
    const cancel = () => stream.cancel();
    interrupted.addEventListener('abort', cancel, { once: true });
    if (interrupted.aborted) cancel();
    for await (const r of stream as AsyncIterable<adminV1.BackupResponse>) {
      if (r.chunk.length > 0) {
        hash.update(r.chunk);
        bytes += r.chunk.length;
        await file.write(r.chunk);
      }
      if (r.sha256 !== '') trailer = r;
    }
    const sha256 = hash.digest('hex');
    if (trailer === undefined) throw new Error('the backup stream ended before its last message');
    if (trailer.totalBytes !== bytes || trailer.sha256 !== sha256) throw new Error(`the backup arrived damaged (${bytes} bytes, sha256 ${sha256}; the server sent ${trailer.totalBytes} bytes, sha256 ${trailer.sha256})`);
    await file.sync();
    await file.close();
    closed = true;
    await rename(part, out);
    return { bytes, sha256 };
  } catch (err) {
    if (!closed) await file.close();
    await rm(part, { force: true });
    throw err;
  }
}

function parseAfter(after: string | undefined): number {
  const afterEventId = after === undefined ? 0 : Number(after);
  if (!Number.isInteger(afterEventId) || afterEventId < 0) throw new UsageError('--after must be a whole number');
  return afterEventId;
}

async function followEvents(client: AdminClient, from: number | 'first', json: boolean, io: CliIo): Promise<number> {
  const stream = client.watchEvents(from);
  const interrupted =
    io.interrupted ??
    new Promise<void>((resolve) => {
      process.once('SIGINT', () => resolve());
    });
  return await new Promise<number>((resolve) => {
    let stopping = false;
    void interrupted.then(() => {
      stopping = true;
      stream.cancel();
    });
    stream.on('data', (r: adminV1.WatchEventsResponse) => {
      const e = r.event!;
      if (json) io.stdout(`${JSON.stringify(eventJson(e))}\n`);
      else {
        const about = [e.workerId && `worker=${e.workerId}`, e.sessionId && `session=${e.sessionId}`, e.projectId && `project=${e.projectId}`].filter(Boolean).join(' ');
        io.stdout(`${iso(e.occurredAt)}  #${e.eventId}  ${e.type}  ${about}  ${e.dataJson}\n`);
      }
    });
    stream.on('error', (err: ServiceError) => {
      if (stopping && err.code === grpcStatus.CANCELLED) resolve(0);
      else {
        io.stderr(`error: ${describeGrpcError(err, client.channel)}\n`);
        resolve(1);
      }
    });
    stream.on('end', () => resolve(stopping ? 0 : 1));
  });
}

function describeGrpcError(err: unknown, channel?: { tls: boolean; clientCert: boolean }): string {
  const e = err as Partial<ServiceError>;
  const tls = typeof e.details === 'string' ? describeTlsFailure(e.details, { caFile: '--ca', serverName: '--server-name', certFile: '--cert/--key' }, channel) : undefined;
  if (tls !== undefined) return `${tls} [${e.details}]`;
  if (typeof e.code === 'number') {
    const name = grpcStatus[e.code] ?? String(e.code);
    return `${name}: ${e.details ?? e.message ?? ''}`;
  }
  return (err as Error).message;
}
