// The warm pool in the dashboard's sessions answer, over real HTTP from a real control plane whose
// agent runs scripted sessions (the test says when an app identifies or crashes): null without a
// pool; then ready, starting, wanted, claims and misses as the pool fills and viewers come; why the
// live build is no longer warmed after its instances kept failing, and the settings saved again
// (the panel's button) warming it anew. Members read it; another customer gets the route's 403.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import type { DashboardWarmPool } from '@pixelfleet/dashboard';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { DashboardClient, signedInPerson } from '../support/dashboard-client';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { seedLiveBuild } from '../support/seed';

const PASSWORD = 'correct horse battery';
const clock = new ManualClock(Date.now());
let t: TestControlPlane;
let close: (() => Promise<void>) | undefined;

beforeAll(async () => {
  // On a fake clock that jumps seconds, a lease of an hour: the agent's heartbeats come on real time.
  t = await startTestControlPlane({ clock, overrides: { workers: { heartbeatIntervalSeconds: 10, leaseSeconds: 3600, lostGraceSeconds: 120 } } });
});

afterAll(async () => {
  await close?.();
  await t?.destroy();
});

async function signedIn(email: string): Promise<{ client: DashboardClient; userId: string }> {
  return signedInPerson(t, email, PASSWORD);
}

describe("a project's warm pool in the dashboard", () => {
  it('is null without a pool, then follows the pool, its viewers and its failures; members read it, others are refused', async () => {
    const owner = await signedIn('wanda@example.com');
    const reader = await signedIn('reed@example.com');
    const outsider = await signedIn('oscar@example.com');
    const project = await t.cp.accounts.createProject(owner.userId, 'Warm', 'europe');
    await t.cp.accounts.addMember(project.projectId, reader.userId, 'READONLY');
    seedLiveBuild(t.cp, project.projectId);
    const base = `/dashboard/api/projects/${project.projectId}`;
    const script = new ScriptedSessions();
    const { agent } = await startTestAgent({ grpcAddress: t.started.grpcAddress, slots: 3, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal });
    script.agent = agent;
    close = () => agent.close();
    await linkReaches(agent, 'connected');
    const poolAs = async (client: DashboardClient): Promise<DashboardWarmPool | null> => {
      const answer = await client.request('GET', `${base}/sessions`);
      expect(answer.status).toBe(200);
      return answer.json.warmPool as DashboardWarmPool | null;
    };

    expect(await poolAs(owner.client)).toBeNull();
    // The minimum, saved as the settings page saves it.
    expect((await owner.client.patch(`${base}/settings`, { warmPoolMinIdle: 2 })).status).toBe(200);
    await expect.poll(() => script.started.length).toBe(2);
    const [first, second] = script.started as [string, string];
    expect(await poolAs(reader.client)).toEqual({ minIdle: 2, wanted: 2, ready: 0, starting: 2, ending: 0, claims: 0, misses: 0, stopped: null });
    script.report(second, 'appIdentified');
    await expect.poll(() => poolAs(reader.client)).toMatchObject({ ready: 1, starting: 1 });

    // A viewer is served by the ready one; its replacement starts in the third slot.
    const served = t.cp.sessions.claimWarm(t.cp.accounts.requireProject(project.projectId));
    expect(served?.session.sessionId).toBe(second);
    await expect.poll(() => script.started.length).toBe(3);
    expect(await poolAs(owner.client)).toMatchObject({ ready: 0, starting: 2, claims: 1, misses: 0 });
    // A viewer who waited in line (every slot held) and was placed when one freed: a miss.
    const waiting = t.cp.sessions.create(t.cp.accounts.requireProject(project.projectId)).session;
    t.cp.sessions.end(second, 'viewerLeft');
    await expect.poll(() => t.cp.sessions.get(waiting.sessionId).status).toBe('Starting');
    expect(await poolAs(owner.client)).toMatchObject({ claims: 1, misses: 1 });

    // Another customer gets the route's usual refusal, and nobody signed out sees anything.
    expect(await outsider.client.request('GET', `${base}/sessions`)).toMatchObject({ status: 403, json: { message: 'Access denied' } });
    expect(await new DashboardClient(t.started.httpOrigin).request('GET', `${base}/sessions`)).toMatchObject({ status: 401, json: { message: 'Not signed in' } });

    // Its instances keep failing: two crash, then the launches are refused (5 s, then 10 s apart).
    script.crash(first);
    script.crash(script.started[2]!);
    await expect.poll(async () => (await poolAs(owner.client))?.starting).toBe(0);
    script.failStartWith = 'LAUNCH_FAILED';
    clock.advance(10_000);
    const stoppedAt = clock.now();
    await expect.poll(async () => (await poolAs(reader.client))?.stopped).toEqual({ uploadId: 'upl_live', failures: 3, reason: 'app failed to launch', at: stoppedAt });
    expect(await poolAs(reader.client)).toMatchObject({ ready: 0, starting: 0, wanted: 2 });

    // What the panel's button sends: the minimum as it is, which warms the build again.
    script.failStartWith = undefined;
    expect(await reader.client.patch(`${base}/settings`, { warmPoolMinIdle: 2 })).toMatchObject({ status: 403, json: { message: 'Forbidden: read-only access' } });
    expect((await owner.client.patch(`${base}/settings`, { warmPoolMinIdle: 2 })).status).toBe(200);
    await expect.poll(() => poolAs(owner.client)).toMatchObject({ starting: 2, stopped: null });

    // Back to no minimum: once its instances are stopped, the project has no pool to show.
    expect((await owner.client.patch(`${base}/settings`, { warmPoolMinIdle: 0 })).status).toBe(200);
    await expect.poll(() => poolAs(owner.client), { timeout: 10_000 }).toBeNull();
  });
});
