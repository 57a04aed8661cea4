// `pixelfleet admin …` end to end against a running control plane (real gRPC, real SQLite):
// every command, its human and --json output, and its errors.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runAdminCli } from '@pixelfleet/control-plane';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { apiKeyRows, fleetEvents, lastEventId, memberAccess, seedBuild, seedSession, setLiveUpload, statusHistory } from '../support/seed';
import type { Agent } from '@pixelfleet/agent';

let t: TestControlPlane;
let agent: Agent;

beforeAll(async () => {
  t = await startTestControlPlane();
  agent = (await startTestAgent({ grpcAddress: t.started.grpcAddress })).agent;
  await linkReaches(agent, 'connected');
});

afterAll(async () => {
  await agent.close();
  await t.destroy();
});

interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

async function admin(args: string[], env: Record<string, string> = {}, interrupted?: Promise<void>): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  const code = await runAdminCli(args, {
    env: { PIXELFLEET_ADMIN_SERVER: t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN, ...env },
    stdout: (s) => (stdout += s),
    stderr: (s) => (stderr += s),
    ...(interrupted ? { interrupted } : {}),
  });
  return { code, stdout, stderr };
}

async function json<T>(args: string[]): Promise<T> {
  const r = await admin([...args, '--json']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as T;
}

describe('accounts', () => {
  it('user create, key issue, project create, member add/remove, subscription', async () => {
    const { userId } = await json<{ userId: string }>(['user', 'create', '--email', 'owner@example.com']);
    expect(userId).toMatch(/^usr_[0-9a-f]{24}$/);

    const { apiKey: first } = await json<{ apiKey: string }>(['key', 'issue', '--user', userId]);
    const { apiKey: second } = await json<{ apiKey: string }>(['key', 'issue', '--user', userId]);
    expect(first).toMatch(/^pfk_[A-Za-z0-9_-]{43}$/);
    expect(second).not.toBe(first);
    // Only digests are stored, and only the newest key is live.
    const keys = apiKeyRows(t.cp, userId);
    expect(keys).toHaveLength(2);
    expect(keys.map((k) => k.revokedAt === null)).toEqual([false, true]);
    expect(JSON.stringify(keys)).not.toContain(second);

    const { projectId } = await json<{ projectId: string }>(['project', 'create', '--owner', userId, '--name', 'Demo', '--region', 'europe']);
    expect(projectId).toMatch(/^prj_/);

    const { userId: memberId } = await json<{ userId: string }>(['user', 'create', '--email', 'member@example.com']);
    expect(await json(['member', 'add', '--project', projectId, '--user', memberId, '--access', 'READONLY'])).toEqual({ projectId, userId: memberId, access: 'READONLY' });
    expect(await json(['member', 'add', '--project', projectId, '--user', memberId, '--access', 'FULL'])).toEqual({ projectId, userId: memberId, access: 'FULL' });
    expect(memberAccess(t.cp, projectId, memberId)).toBe('FULL');
    expect(await json(['member', 'remove', '--project', projectId, '--user', memberId])).toEqual({ projectId, userId: memberId, removed: true });
    expect(await json(['member', 'remove', '--project', projectId, '--user', memberId])).toEqual({ projectId, userId: memberId, removed: false });

    expect(await json(['project', 'subscription', '--project', projectId, '--status', 'expired'])).toEqual({ projectId, subscriptionStatus: 'expired' });
    expect(t.cp.accounts.requireProject(projectId).subscriptionStatus).toBe('expired');

    const human = await admin(['user', 'create', '--email', 'human@example.com']);
    expect(human.stdout).toMatch(/^userId {2}usr_[0-9a-f]{24}\nAn invitation to set a dashboard password goes to human@example\.com \(the link works once, for 72 hours\)\.\n$/);
  });

  it('refuses bad input with the server reason and exit code 1', async () => {
    const dup = await admin(['user', 'create', '--email', 'dup@example.com']);
    expect(dup.code).toBe(0);
    expect(await admin(['user', 'create', '--email', 'DUP@example.com'])).toMatchObject({ code: 1, stderr: 'error: ALREADY_EXISTS: a user with email DUP@example.com already exists\n' });
    expect(await admin(['user', 'create', '--email', 'not-an-email'])).toMatchObject({ code: 1, stderr: 'error: INVALID_ARGUMENT: email "not-an-email" is not a valid e-mail address\n' });
    expect(await admin(['key', 'issue', '--user', 'usr_missing'])).toMatchObject({ code: 1, stderr: 'error: NOT_FOUND: user usr_missing not found\n' });
    const owner = await json<{ userId: string }>(['user', 'create', '--email', 'o2@example.com']);
    expect(await admin(['project', 'create', '--owner', owner.userId, '--name', 'X', '--region', 'mars'])).toMatchObject({
      code: 1,
      stderr: 'error: INVALID_ARGUMENT: region "mars" is not one of us-east-1, europe, asia-pacific\n',
    });
    expect(await admin(['member', 'add', '--project', 'prj_missing', '--user', owner.userId, '--access', 'FULL'])).toMatchObject({ code: 1, stderr: 'error: NOT_FOUND: project prj_missing not found\n' });
  });

  it('usage errors exit 2 without calling the server', async () => {
    expect(await admin(['user', 'create'])).toMatchObject({ code: 2 });
    expect((await admin(['user', 'create'])).stderr).toContain('--email is required for "user create"');
    expect((await admin(['frobnicate'])).stderr).toContain('unknown command "admin frobnicate"');
    expect((await admin(['member', 'add', '--project', 'p', '--user', 'u', '--access', 'ADMIN'])).stderr).toContain('--access must be FULL or READONLY');
    expect((await admin(['workers', '--bogus'])).code).toBe(2);
    const noServer = await runAdminCli(['workers'], { env: {}, stdout: () => undefined, stderr: () => undefined });
    expect(noServer).toBe(2);
  });

  it('a missing or wrong admin token is UNAUTHENTICATED', async () => {
    expect(await admin(['workers'], { PIXELFLEET_ADMIN_TOKEN: 'wrong-token-wrong-token' })).toMatchObject({ code: 1, stderr: 'error: UNAUTHENTICATED: invalid admin token\n' });
    expect(await admin(['workers', '--token', 'x'])).toMatchObject({ code: 1, stderr: 'error: UNAUTHENTICATED: invalid admin token\n' });
    expect(await admin(['events'], { PIXELFLEET_ADMIN_TOKEN: 'wrong-token-wrong-token' })).toMatchObject({ code: 1, stderr: 'error: UNAUTHENTICATED: invalid admin token\n' });
    expect(t.logs.text()).not.toContain('wrong-token-wrong-token');
  });
});

describe('workers, sessions, builds', () => {
  it('lists workers and drains/undrains one', async () => {
    const { workers } = await json<{ workers: { workerId: string; status: string; slots: number; usedSlots: number; region: string }[] }>(['workers']);
    expect(workers).toEqual([expect.objectContaining({ workerId: agent.workerId, status: 'connected', region: 'europe', slots: 1, usedSlots: 0 })]);
    const table = await admin(['workers']);
    expect(table.stdout.split('\n')[0]).toMatch(/^WORKER +HOSTNAME +REGION +STATUS +LINK +SLOTS +AGENT +LAST SEEN$/);
    expect(table.stdout).toContain(agent.workerId);

    expect(await json(['worker', 'drain', '--worker', agent.workerId])).toMatchObject({ workerId: agent.workerId, status: 'draining', draining: true });
    expect(await json(['worker', 'undrain', '--worker', agent.workerId])).toMatchObject({ workerId: agent.workerId, status: 'connected', draining: false });
    expect(await admin(['worker', 'drain', '--worker', 'wrk_missing'])).toMatchObject({ code: 1, stderr: 'error: NOT_FOUND: worker wrk_missing not found\n' });
  });

  it('lists sessions (optionally of one project) and ends one, idempotently', async () => {
    const owner = await json<{ userId: string }>(['user', 'create', '--email', 'sessions@example.com']);
    const { projectId } = await json<{ projectId: string }>(['project', 'create', '--owner', owner.userId, '--name', 'S', '--region', 'europe']);
    const sessionId = seedSession(t.cp, { projectId, status: 'Enqueued' });

    const listed = await json<{ sessions: { sessionId: string; status: string }[] }>(['sessions', '--project', projectId]);
    expect(listed.sessions).toEqual([expect.objectContaining({ sessionId, status: 'Enqueued', projectId, assignedWorker: null })]);
    const all = await json<{ sessions: { sessionId: string }[] }>(['sessions']);
    expect(all.sessions.map((s) => s.sessionId)).toContain(sessionId);

    expect(await json(['session', 'end', '--session', sessionId])).toMatchObject({ sessionId, status: 'Terminated', endReason: 'ended by operator' });
    expect(await json(['session', 'end', '--session', sessionId])).toMatchObject({ sessionId, status: 'Terminated' });
    // The seeded Enqueued snapshot, then the one Terminated the two ends recorded.
    expect(statusHistory(t.cp, sessionId)).toEqual(['Enqueued', 'Terminated']);
    expect(await admin(['session', 'end', '--session', 'session_0_0'])).toMatchObject({ code: 1, stderr: 'error: NOT_FOUND: session session_0_0 not found\n' });
  });

  it('ending a running session sends StopSession to its worker and ends it when acked', async () => {
    const owner = await json<{ userId: string }>(['user', 'create', '--email', 'running@example.com']);
    const { projectId } = await json<{ projectId: string }>(['project', 'create', '--owner', owner.userId, '--name', 'R', '--region', 'europe']);
    const sessionId = seedSession(t.cp, { projectId, status: 'Running', workerId: agent.workerId });
    const ended = await json<{ status: string }>(['session', 'end', '--session', sessionId]);
    expect(ended.status).toBe('Terminating');
    // The agent does not run it, so its stop succeeds at once and the session ends.
    await expect.poll(() => t.cp.sessions.get(sessionId).status).toBe('Terminated');
  });

  it('lists builds of a project, newest first', async () => {
    const owner = await json<{ userId: string }>(['user', 'create', '--email', 'builds@example.com']);
    const { projectId } = await json<{ projectId: string }>(['project', 'create', '--owner', owner.userId, '--name', 'B', '--region', 'europe']);
    expect(await json(['builds', '--project', projectId])).toEqual({ builds: [] });
    seedBuild(t.cp, { uploadId: 'upl_old', projectId, fileUrl: 'https://example.com/a.zip', status: 'Approved', createdAt: 1000 });
    seedBuild(t.cp, { uploadId: 'upl_new', projectId, fileUrl: 'https://example.com/b.zip', status: 'pending', createdAt: 2000 });
    setLiveUpload(t.cp, projectId, 'upl_old');
    const { builds } = await json<{ builds: { uploadId: string; live: boolean; status: string }[] }>(['builds', '--project', projectId]);
    expect(builds.map((b) => [b.uploadId, b.status, b.live])).toEqual([
      ['upl_new', 'pending', false],
      ['upl_old', 'Approved', true],
    ]);
    expect(await admin(['builds', '--project', 'prj_missing'])).toMatchObject({ code: 1, stderr: 'error: NOT_FOUND: project prj_missing not found\n' });
  });
});

describe('worker move and remove', () => {
  /** Another worker of its own (the shared one stays for the other tests), connected, in europe. */
  async function ownWorker(): Promise<{ agent: Agent; dataDir: string }> {
    const started = await startTestAgent({ grpcAddress: t.started.grpcAddress, region: 'europe' });
    await linkReaches(started.agent, 'connected');
    return started;
  }

  it('worker move: its sessions end as ended by operator, its stream ends, a Hello naming the old region is refused and one naming the new is accepted', async () => {
    const { agent: moving, dataDir } = await ownWorker();
    const owner = await json<{ userId: string }>(['user', 'create', '--email', 'move@example.com']);
    const { projectId } = await json<{ projectId: string }>(['project', 'create', '--owner', owner.userId, '--name', 'M', '--region', 'europe']);
    const sessionId = seedSession(t.cp, { projectId, status: 'Running', workerId: moving.workerId });

    expect(await admin(['worker', 'move', '--worker', moving.workerId, '--region', 'mars'])).toMatchObject({ code: 1, stderr: expect.stringContaining('INVALID_ARGUMENT: region "mars" is not one of') as unknown });
    expect(t.cp.sessions.get(sessionId).status).toBe('Running'); // a refused move ends nothing

    const moved = await json<{ workerId: string; region: string; endedSessions: number }>(['worker', 'move', '--worker', moving.workerId, '--region', 'us-east-1']);
    expect(moved).toMatchObject({ workerId: moving.workerId, region: 'us-east-1', endedSessions: 1 });
    expect(t.cp.sessions.get(sessionId)).toMatchObject({ status: 'Terminated', endReason: 'ended by operator' });
    // Its agent still names europe: its stream ended, and each redial is refused.
    await expect.poll(() => t.logs.lines.some((l) => l.includes('Hello refused: the worker names another region') && l.includes(moving.workerId))).toBe(true);
    expect(moving.link.linkState).not.toBe('connected');
    expect(t.cp.registry.get(moving.workerId)).toMatchObject({ region: 'us-east-1' });
    await moving.close();
    // With its region set to the new one it is back, where the move put it.
    const again = (await startTestAgent({ grpcAddress: t.started.grpcAddress, region: 'us-east-1', dataDir })).agent;
    try {
      await linkReaches(again, 'connected');
      expect(again.workerId).toBe(moving.workerId);
      expect(t.cp.registry.placeable('us-east-1').map((w) => w.workerId)).toContain(moving.workerId);
      expect(t.cp.registry.placeable('europe').map((w) => w.workerId)).not.toContain(moving.workerId);
      const events = fleetEvents(t.cp, { type: 'worker.moved', workerId: moving.workerId });
      expect(events.map((e) => e.data)).toEqual([{ from: 'europe', to: 'us-east-1' }]);
    } finally {
      await again.close();
    }
  });

  it('worker remove: its token stops working at once, its stream and sessions end, and it is listed no more', async () => {
    const { agent: removed } = await ownWorker();
    const owner = await json<{ userId: string }>(['user', 'create', '--email', 'remove@example.com']);
    const { projectId } = await json<{ projectId: string }>(['project', 'create', '--owner', owner.userId, '--name', 'X', '--region', 'europe']);
    const sessionId = seedSession(t.cp, { projectId, status: 'Starting', workerId: removed.workerId });
    const refusedBefore = t.logs.lines.filter((l) => l.includes('refused: missing or invalid worker token')).length;
    try {
      const result = await json<{ workerId: string; status: string; endedSessions: number }>(['worker', 'remove', '--worker', removed.workerId]);
      expect(result).toMatchObject({ workerId: removed.workerId, status: 'removed', endedSessions: 1 });
      expect(t.cp.sessions.get(sessionId)).toMatchObject({ status: 'Terminated', endReason: 'ended by operator' });
      expect((await json<{ workers: { workerId: string }[] }>(['workers'])).workers.map((w) => w.workerId)).not.toContain(removed.workerId);
      // The agent redials with its old token and is refused for good.
      await expect.poll(() => removed.link.linkState).not.toBe('connected');
      await expect.poll(() => t.logs.lines.filter((l) => l.includes('refused: missing or invalid worker token')).length).toBeGreaterThan(refusedBefore);
      expect(t.cp.registry.authenticate('pfw_guess')).toBeUndefined();
      expect(await admin(['worker', 'remove', '--worker', removed.workerId])).toMatchObject({ code: 1, stderr: expect.stringContaining('NOT_FOUND') as unknown });
      expect(fleetEvents(t.cp, { type: 'worker.removed', workerId: removed.workerId })).toHaveLength(1);
    } finally {
      await removed.close();
    }
  });
});

describe('events', () => {
  it('replays from --after and follows new events until interrupted', async () => {
    const after = lastEventId(t.cp);
    let stop!: () => void;
    const interrupted = new Promise<void>((r) => (stop = r));
    let stdout = '';
    const running = runAdminCli(['events', '--after', String(after - 1), '--json'], {
      env: { PIXELFLEET_ADMIN_SERVER: t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
      stdout: (s) => {
        stdout += s;
        // After the replayed event arrives, cause a live one; after that one, interrupt.
        const lines = stdout.trim().split('\n');
        if (lines.length === 1) t.cp.registry.drain(agent.workerId);
        if (lines.length === 2) stop();
      },
      stderr: () => undefined,
      interrupted,
    });
    expect(await running).toBe(0);
    const events = stdout.trim().split('\n').map((l) => JSON.parse(l) as { eventId: number; type: string; workerId: string | null });
    expect(events[0]!.eventId).toBe(after);
    expect(events[1]).toMatchObject({ type: 'worker.drained', workerId: agent.workerId });
    t.cp.registry.undrain(agent.workerId);
  });

  it('--from-start replays every stored event from the first, then follows', async () => {
    const stored = fleetEvents(t.cp);
    const first = { id: stored[0]!.eventId, n: stored.length };
    let stop!: () => void;
    const interrupted = new Promise<void>((r) => (stop = r));
    let stdout = '';
    const running = runAdminCli(['events', '--from-start', '--json'], {
      env: { PIXELFLEET_ADMIN_SERVER: t.started.grpcAddress, PIXELFLEET_ADMIN_TOKEN: TEST_ADMIN_TOKEN },
      stdout: (s) => {
        stdout += s;
        const lines = stdout.trim().split('\n');
        if (lines.length === first.n) t.cp.registry.drain(agent.workerId);
        if (lines.length === first.n + 1) stop();
      },
      stderr: () => undefined,
      interrupted,
    });
    expect(await running).toBe(0);
    const events = stdout.trim().split('\n').map((l) => JSON.parse(l) as { eventId: number; type: string });
    expect(events[0]!.eventId).toBe(first.id);
    expect(events).toHaveLength(first.n + 1);
    expect(events.at(-1)).toMatchObject({ type: 'worker.drained' });
    t.cp.registry.undrain(agent.workerId);
    expect(await admin(['events', '--from-start', '--after', '3'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--after and --from-start exclude each other') as unknown });
  });
});

describe('what a new operator tries', () => {
  it('--help and --version on the group and on every command, to stdout, exit 0, without a server', async () => {
    const noServer = async (args: string[]) => {
      let stdout = '';
      let stderr = '';
      const code = await runAdminCli(args, { env: {}, stdout: (s) => (stdout += s), stderr: (s) => (stderr += s) });
      return { code, stdout, stderr };
    };
    for (const words of [[], ['user', 'create'], ['key', 'issue'], ['project'], ['project', 'create'], ['project', 'subscription'], ['project', 'stats'], ['member', 'add'], ['member', 'remove'], ['workers'], ['worker', 'drain'], ['worker', 'undrain'], ['sessions'], ['session', 'end'], ['builds'], ['events'], ['backup']]) {
      const help = await noServer([...words, '--help']);
      expect(help, words.join(' ')).toMatchObject({ code: 0, stderr: '' });
      expect(help.stdout).toContain(`Usage: pixelfleet admin ${words.join(' ')}`.trimEnd());
      expect(await noServer([...words, '--version'])).toEqual({ code: 0, stdout: 'pixelfleet 0.1.0\n', stderr: '' });
    }
    expect((await noServer(['backup', '--help'])).stdout).toContain('--out FILE');
    expect(await noServer(['nonsense', '--help'])).toMatchObject({ code: 2, stdout: '', stderr: expect.stringContaining('unknown command "admin nonsense"') as unknown });
  });

  it('project subscription accepts only known statuses, in the CLI and in AdminService', async () => {
    const user = await t.cp.accounts.createUser('subscription-values@example.com');
    const { projectId } = await t.cp.accounts.createProject(user.userId, 'Statuses', 'europe');
    const bad = await admin(['project', 'subscription', '--project', projectId, '--status', 'actve']);
    expect(bad).toMatchObject({ code: 2, stderr: expect.stringContaining('--status must be one of active, past_due, canceled, expired, suspended') as unknown });
    expect(() => t.cp.accounts.setSubscriptionStatus(projectId, 'actve')).toThrow('status "actve" must be one of active, past_due, canceled, expired, suspended');
    expect(t.cp.accounts.requireProject(projectId).subscriptionStatus).toBe('active');
    for (const status of ['past_due', 'canceled', 'suspended', 'expired', 'active']) {
      expect(await admin(['project', 'subscription', '--project', projectId, '--status', status])).toMatchObject({ code: 0 });
      expect(t.cp.accounts.requireProject(projectId).subscriptionStatus).toBe(status);
    }
  });
});
