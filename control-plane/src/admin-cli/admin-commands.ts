// The table of `pixelfleet admin` commands: each one's words, its own flags, what it does and the
// AdminService call it makes. admin-cli.ts turns each entry into a command of the `pixelfleet`
// command line (@pixelfleet/common's runner: usage, --help, --version and flag parsing come from
// here), connects to the server and hands the entry an AdminCall.
import { CliUsageError } from '@pixelfleet/common';
import { adminV1, REGION_CODES } from '@pixelfleet/proto';
import { ACTIVE_SUBSCRIPTION, SUBSCRIPTION_STATUSES } from '../auth/project-access';
import type { AdminClient } from './admin-client';
import { buildJson, iso, progressText, sessionJson, warmMark, workerJson } from './admin-output';
import { followEvents, writeBackupCommand } from './admin-streams';
import { renderFields, renderTable } from './table';

/** How a command talks to the operator: the environment, the two streams, and an interruption (`events`, `backup`). */
export interface AdminIo {
  env: Readonly<Record<string, string | undefined>>;
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  /** Resolves when the user interrupts a following command (`events`); defaults to SIGINT. */
  interrupted?: Promise<void>;
}

/** What a command's run gets: the connected client and its own flags. */
export interface AdminCall {
  readonly client: AdminClient;
  readonly io: AdminIo;
  /** --json: one JSON document instead of a table. */
  readonly json: boolean;
  /** A string flag the command cannot go without. @throws CliUsageError naming it */
  readonly need: (flag: string) => string;
  readonly value: (flag: string) => string | undefined;
  readonly isSet: (flag: string) => boolean;
  /** The JSON document under --json, else the human text. */
  readonly print: (json: unknown, human: string) => void;
}

export interface AdminCommandSpec {
  /** After `pixelfleet admin`: `['user', 'create']`. */
  readonly words: readonly [string, ...string[]];
  /** Its own flags as its usage line shows them (`--email E`). */
  readonly args: string;
  readonly about: string;
  /** Its string flags and its boolean flags (the connection's are every command's: admin-cli.ts). */
  readonly strings?: readonly string[];
  readonly booleans?: readonly string[];
  /** Runs it; resolves with the exit code (0 unless it says otherwise). */
  readonly run: (call: AdminCall) => Promise<number | void>;
}

/** The groups the commands' first words make, with what each holds (their own --help lists their commands). */
export const ADMIN_GROUPS: Readonly<Record<string, string>> = {
  user: 'user accounts',
  key: 'API keys',
  project: 'projects: create, subscription, live numbers',
  member: "a project's members",
  worker: 'one worker: drain, undrain, move, remove',
  session: 'one session',
};

/** One line for a project's warm pool: what is ready, what it wants, and why it is not warmed when it is not. */
function warmPoolLine(p: { wanted: number; ready: number; starting: number; ending: number; claims: number; misses: number; stoppedFailures?: number; stoppedReason?: string }): string {
  const ending = p.ending > 0 ? `, ${p.ending} ending` : '';
  const stopped = p.stoppedFailures === undefined ? '' : `; not warmed: ${p.stoppedFailures} failures in a row (${p.stoppedReason ?? ''})`;
  return `${p.ready} ready, ${p.starting} starting of ${p.wanted} wanted${ending}; ${p.claims} served warm, ${p.misses} waited for a launch${stopped}`;
}

const ACCESS: Record<string, adminV1.MemberAccess> = {
  FULL: adminV1.MemberAccess.MEMBER_ACCESS_FULL,
  READONLY: adminV1.MemberAccess.MEMBER_ACCESS_READONLY,
};

const REGIONS = REGION_CODES.join('|');

export const ADMIN_COMMANDS: readonly AdminCommandSpec[] = [
  {
    words: ['user', 'create'],
    args: '--email E',
    about: 'adds a user account and mails them an invitation to set their dashboard password',
    strings: ['email'],
    run: async ({ client, need, print }) => {
      const email = need('email');
      const r = await client.call<adminV1.CreateUserResponse>((c, md, o, cb) => c.createUser({ email }, md, o, cb));
      const note = r.invitationMailed ? `An invitation to set a dashboard password goes to ${email} (the link works once, for 72 hours).\n` : '';
      print({ userId: r.userId, invitationMailed: r.invitationMailed }, renderFields({ userId: r.userId }) + note);
    },
  },
  {
    words: ['key', 'issue'],
    args: '--user U',
    about: "issues the user's API key (revokes the user's previous key at once)",
    strings: ['user'],
    run: async ({ client, need, print }) => {
      const r = await client.call<adminV1.IssueKeyResponse>((c, md, o, cb) => c.issueKey({ userId: need('user') }, md, o, cb));
      print({ apiKey: r.apiKey }, renderFields({ apiKey: r.apiKey }) + 'Store this key now: it is not shown again. The previous key no longer works.\n');
    },
  },
  {
    words: ['project', 'create'],
    args: `--owner U --name N --region ${REGIONS}`,
    about: 'adds a project',
    strings: ['owner', 'name', 'region'],
    run: async ({ client, need, print }) => {
      const r = await client.call<adminV1.CreateProjectResponse>((c, md, o, cb) => c.createProject({ ownerUserId: need('owner'), name: need('name'), region: need('region') }, md, o, cb));
      print({ projectId: r.projectId }, renderFields({ projectId: r.projectId }));
    },
  },
  {
    words: ['project', 'subscription'],
    args: `--project P --status ${SUBSCRIPTION_STATUSES.join('|')}`,
    about: `sets the subscription status (${ACTIVE_SUBSCRIPTION} allows writes)`,
    strings: ['project', 'status'],
    run: async ({ client, need, print }) => {
      const projectId = need('project');
      const status = need('status');
      if (!SUBSCRIPTION_STATUSES.includes(status)) throw new CliUsageError(`--status must be one of ${SUBSCRIPTION_STATUSES.join(', ')}`);
      await client.call<adminV1.SetSubscriptionStatusResponse>((c, md, o, cb) => c.setSubscriptionStatus({ projectId, status }, md, o, cb));
      print({ projectId, subscriptionStatus: status }, renderFields({ projectId, subscriptionStatus: status }));
    },
  },
  {
    words: ['project', 'stats'],
    args: '--project P',
    about: 'live and queued viewers, and the warm pool when the project has one',
    strings: ['project'],
    run: async ({ client, need, print }) => {
      const projectId = need('project');
      const r = await client.call<adminV1.GetProjectStatsResponse>((c, md, o, cb) => c.getProjectStats({ projectId }, md, o, cb));
      const pool = r.warmPool;
      if (pool === undefined) {
        print({ projectId, liveUser: r.liveUser, queueUser: r.queueUser }, renderFields({ projectId, liveUser: r.liveUser, queueUser: r.queueUser }));
        return;
      }
      const warmPool = { wanted: pool.wanted, ready: pool.ready, starting: pool.starting, ending: pool.ending, claims: pool.claims, misses: pool.misses, ...(pool.stoppedFailures > 0 ? { stoppedFailures: pool.stoppedFailures, stoppedReason: pool.stoppedReason } : {}) };
      print({ projectId, liveUser: r.liveUser, queueUser: r.queueUser, warmPool }, renderFields({ projectId, liveUser: r.liveUser, queueUser: r.queueUser, 'warm pool': warmPoolLine(warmPool) }));
    },
  },
  {
    words: ['member', 'add'],
    args: '--project P (--user U | --email E) --access FULL|READONLY',
    about: 'gives a user access to a project; a new e-mail address gets a user and an invitation',
    strings: ['project', 'user', 'email', 'access'],
    run: async ({ client, need, value, print }) => {
      const projectId = need('project');
      const user = value('user');
      const email = value('email');
      if ((user === undefined) === (email === undefined)) throw new CliUsageError('member add needs --user or --email (one of them)');
      const accessName = need('access');
      const access = ACCESS[accessName];
      if (access === undefined) throw new CliUsageError('--access must be FULL or READONLY');
      const r = await client.call<adminV1.AddMemberResponse>((c, md, o, cb) => c.addMember({ projectId, userId: user ?? '', email: email ?? '', access }, md, o, cb));
      const note = r.invitationMailed ? `An invitation to set a dashboard password goes to ${email ?? ''} (the link works once, for 72 hours).\n` : '';
      print(
        { projectId, userId: r.userId, access: accessName, ...(email === undefined ? {} : { invitationMailed: r.invitationMailed }) },
        renderFields({ projectId, userId: r.userId, access: accessName }) + note,
      );
    },
  },
  {
    words: ['member', 'remove'],
    args: '--project P --user U',
    about: "takes a user's access away",
    strings: ['project', 'user'],
    run: async ({ client, need, print }) => {
      const projectId = need('project');
      const userId = need('user');
      const r = await client.call<adminV1.RemoveMemberResponse>((c, md, o, cb) => c.removeMember({ projectId, userId }, md, o, cb));
      print({ projectId, userId, removed: r.removed }, r.removed ? `Removed ${userId} from ${projectId}\n` : `${userId} was not a member of ${projectId}\n`);
    },
  },
  {
    words: ['workers'],
    args: '',
    about: 'lists the workers',
    run: async ({ client, print }) => {
      const r = await client.call<adminV1.ListWorkersResponse>((c, md, o, cb) => c.listWorkers({}, md, o, cb));
      print(
        { workers: r.workers.map(workerJson) },
        renderTable(
          ['WORKER', 'HOSTNAME', 'REGION', 'STATUS', 'LINK', 'SLOTS', 'AGENT', 'LAST SEEN'],
          r.workers.map((w) => [w.workerId, w.hostname, w.region, w.status, w.link, `${w.usedSlots}/${w.slots}`, w.agentVersion, iso(w.lastSeenAt) ?? 'never']),
        ),
      );
    },
  },
  {
    words: ['worker', 'drain'],
    args: '--worker W',
    about: 'stops placing sessions on a worker',
    strings: ['worker'],
    run: async ({ client, need, print }) => {
      const w = (await client.call<adminV1.DrainWorkerResponse>((c, md, o, cb) => c.drainWorker({ workerId: need('worker') }, md, o, cb))).worker!;
      print(workerJson(w), renderFields({ workerId: w.workerId, status: w.status, link: w.link, draining: w.draining }));
    },
  },
  {
    words: ['worker', 'undrain'],
    args: '--worker W',
    about: 'puts a drained worker back in service',
    strings: ['worker'],
    run: async ({ client, need, print }) => {
      const w = (await client.call<adminV1.UndrainWorkerResponse>((c, md, o, cb) => c.undrainWorker({ workerId: need('worker') }, md, o, cb))).worker!;
      print(workerJson(w), renderFields({ workerId: w.workerId, status: w.status, link: w.link, draining: w.draining }));
    },
  },
  {
    words: ['worker', 'move'],
    args: `--worker W --region ${REGIONS}`,
    about: "moves a worker to another region (its sessions end; its agent's region must then name the new one)",
    strings: ['worker', 'region'],
    run: async ({ client, need, print }) => {
      const workerId = need('worker');
      const region = need('region');
      const r = await client.call<adminV1.MoveWorkerResponse>((c, md, o, cb) => c.moveWorker({ workerId, region }, md, o, cb));
      const w = r.worker!;
      print({ ...workerJson(w), endedSessions: r.endedSessions }, renderFields({ workerId: w.workerId, region: w.region, status: w.status, endedSessions: r.endedSessions }));
    },
  },
  {
    words: ['worker', 'remove'],
    args: '--worker W',
    about: "revokes a worker's token, ends its stream and sessions, and forgets it (it must enroll again)",
    strings: ['worker'],
    run: async ({ client, need, print }) => {
      const r = await client.call<adminV1.RemoveWorkerResponse>((c, md, o, cb) => c.removeWorker({ workerId: need('worker') }, md, o, cb));
      const w = r.worker!;
      print({ ...workerJson(w), endedSessions: r.endedSessions }, renderFields({ workerId: w.workerId, hostname: w.hostname, status: w.status, endedSessions: r.endedSessions }));
    },
  },
  {
    words: ['sessions'],
    args: '[--project P] [--limit N]',
    about: 'lists sessions, newest first; WARM marks the warm instances no viewer has claimed (ready, starting), which hold slots',
    strings: ['project', 'limit'],
    run: async ({ client, value, print }) => {
      const limitText = value('limit');
      const limit = limitText === undefined ? 0 : Number(limitText);
      if (!Number.isInteger(limit) || limit < 0) throw new CliUsageError('--limit must be a whole number');
      const r = await client.call<adminV1.ListSessionsResponse>((c, md, o, cb) => c.listSessions({ projectId: value('project') ?? '', limit }, md, o, cb));
      print(
        { sessions: r.sessions.map(sessionJson) },
        renderTable(
          ['SESSION', 'PROJECT', 'STATUS', 'WARM', 'REGION', 'WORKER', 'CREATED', 'END REASON'],
          r.sessions.map((s) => [s.sessionId, s.projectId, s.status, warmMark(s), s.region, s.assignedWorker || '-', iso(s.createdAt) ?? '', s.endReason || '-']),
        ),
      );
    },
  },
  {
    words: ['session', 'end'],
    args: '--session S',
    about: 'ends a session',
    strings: ['session'],
    run: async ({ client, need, print }) => {
      const s = (await client.call<adminV1.EndSessionResponse>((c, md, o, cb) => c.endSession({ sessionId: need('session') }, md, o, cb))).session!;
      print(sessionJson(s), renderFields({ sessionId: s.sessionId, status: s.status, endReason: s.endReason || '-' }));
    },
  },
  {
    words: ['builds'],
    args: '--project P',
    about: "lists a project's builds",
    strings: ['project'],
    run: async ({ client, need, print }) => {
      const r = await client.call<adminV1.ListBuildsResponse>((c, md, o, cb) => c.listBuilds({ projectId: need('project') }, md, o, cb));
      print(
        { builds: r.builds.map(buildJson) },
        renderTable(
          ['UPLOAD', 'STATUS', 'PROGRESS', 'LIVE', 'AUTO RELEASE', 'CREATED', 'OBJECTION'],
          r.builds.map((b) => [b.uploadId, b.status, progressText(b.progress), b.live ? 'yes' : 'no', b.autoRelease ? 'yes' : 'no', iso(b.createdAt) ?? '', b.objection || '-']),
        ),
      );
    },
  },
  {
    words: ['events'],
    args: '[--after ID | --from-start]',
    about: 'follows new events until interrupted; --after replays those after ID, --from-start all',
    strings: ['after'],
    booleans: ['from-start'],
    run: ({ client, value, isSet, json, io }) => {
      if (isSet('from-start') && value('after') !== undefined) throw new CliUsageError('--after and --from-start exclude each other');
      return followEvents(client, isSet('from-start') ? 'first' : parseAfter(value('after')), json, io);
    },
  },
  {
    words: ['backup'],
    args: '--out FILE',
    about: 'writes a consistent copy of the database (SQLite online backup, taken while serving)',
    strings: ['out'],
    run: ({ client, need, print, io }) => writeBackupCommand(client, need('out'), io, print),
  },
];

function parseAfter(after: string | undefined): number {
  const afterEventId = after === undefined ? 0 : Number(after);
  if (!Number.isInteger(afterEventId) || afterEventId < 0) throw new CliUsageError('--after must be a whole number');
  return afterEventId;
}
