// The dashboard's project routes over real HTTP, as the app calls them: the same access rules as
// the REST API for a signed-in person (404 for an unknown project, 403 `Access denied` for another
// account's, READONLY reads only, an inactive subscription blocks writes, a member taken off is out
// at once), 401 without a sign-in, 403 without the CSRF token, and Set Live's webhook status.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { DashboardClient, signedInPerson } from '../support/dashboard-client';
import { seedBuild, seedEndedSessions, seedSession, setBuildStatus, setProjectWebhook } from '../support/seed';
import { seedLogFile, seedSessionHistory, seedTelemetry } from '../support/analytics-seed';
import { listen, type TestServer } from '../support/local-server';
import { WebhookReceiver } from '../support/webhook-receiver';

const PASSWORD = 'correct horse battery';
let t: TestControlPlane;
let receiver: TestServer;
const webhooks = new WebhookReceiver();

beforeAll(async () => {
  t = await startTestControlPlane({ withoutPipeline: true });
  receiver = await listen((req, res) => {
    if (!webhooks.handle(req, res)) res.writeHead(404).end();
  });
});

afterAll(async () => {
  await receiver?.close();
  await t?.destroy();
});

/** A signed-in person's client, and their user id. */
async function signedIn(email: string): Promise<{ client: DashboardClient; userId: string }> {
  return signedInPerson(t, email, PASSWORD);
}

describe('a project of the dashboard', () => {
  it('is read and written by its owner and FULL members; READONLY reads; others and strangers get the REST API answers', async () => {
    const owner = await signedIn('olga@example.com');
    const full = await signedIn('fred@example.com');
    const reader = await signedIn('rita@example.com');
    const outsider = await signedIn('otto@example.com');
    const project = await t.cp.accounts.createProject(owner.userId, 'Shared', 'europe');
    await t.cp.accounts.addMember(project.projectId, full.userId, 'FULL');
    await t.cp.accounts.addMember(project.projectId, reader.userId, 'READONLY');
    const base = `/dashboard/api/projects/${project.projectId}`;

    const settings = await owner.client.request('GET', `${base}/settings`);
    expect(settings.status).toBe(200);
    expect(settings.json.project).toEqual({ projectId: project.projectId, name: 'Shared', access: 'owner', writable: true, subscriptionStatus: 'active', enabled: true });
    expect((await full.client.request('GET', `${base}/settings`)).json.project).toMatchObject({ access: 'FULL', writable: true });
    expect((await reader.client.request('GET', `${base}/settings`)).json.project).toMatchObject({ access: 'READONLY', writable: false });
    expect(await outsider.client.request('GET', `${base}/settings`)).toMatchObject({ status: 403, json: { message: 'Access denied' } });
    expect(await owner.client.request('GET', '/dashboard/api/projects/prj_nope/builds')).toMatchObject({ status: 404, json: { message: 'Project not found' } });
    expect(await new DashboardClient(t.started.httpOrigin).request('GET', `${base}/builds`)).toMatchObject({ status: 401, json: { message: 'Not signed in' } });

    // Writes: FULL yes, READONLY and outsiders no, and nobody without the CSRF token.
    expect((await full.client.patch(`${base}/settings`, { fps: 50 })).status).toBe(200);
    expect(await reader.client.patch(`${base}/settings`, { fps: 40 })).toMatchObject({ status: 403, json: { message: 'Forbidden: read-only access' } });
    expect(await outsider.client.patch(`${base}/settings`, { fps: 40 })).toMatchObject({ status: 403, json: { message: 'Forbidden' } });
    expect(await owner.client.request('PATCH', `${base}/settings`, { fps: 40 })).toMatchObject({ status: 403, json: { message: 'Missing or invalid CSRF token' } });
    expect(await owner.client.patch(`${base}/settings`, { resX: 1281 })).toMatchObject({ status: 400, json: { message: 'Invalid field: resX must be even' } });
    expect(t.cp.accounts.requireProject(project.projectId).settings.fps).toBe(50);

    // A member taken off is out at once; an inactive subscription blocks writes but not reads.
    t.cp.accounts.removeMember(project.projectId, full.userId);
    expect(await full.client.request('GET', `${base}/settings`)).toMatchObject({ status: 403, json: { message: 'Access denied' } });
    t.cp.accounts.setSubscriptionStatus(project.projectId, 'past_due');
    expect(await owner.client.post(`${base}/disable`)).toMatchObject({ status: 403, json: { message: 'Forbidden: subscription is not active' } });
    expect((await owner.client.request('GET', `${base}/settings`)).json.project).toMatchObject({ writable: false, subscriptionStatus: 'past_due' });
  });

  it("Set Live moves a Ready build to distributing and the webhook reports `Distribute`; Distribute reports the stage's own status; one build call per window", async () => {
    const { client, userId } = await signedIn('sam@example.com');
    const project = await t.cp.accounts.createProject(userId, 'Live', 'europe');
    setProjectWebhook(t.cp, project.projectId, `${receiver.origin}/hook`);
    seedBuild(t.cp, { uploadId: 'upl_setlive', projectId: project.projectId, status: 'Ready' });
    const base = `/dashboard/api/projects/${project.projectId}`;

    expect(await client.post(`${base}/builds/upl_setlive/set-live`)).toMatchObject({ status: 200, json: { uploadId: 'upl_setlive', status: 'Distributing to Servers' } });
    expect((await webhooks.until('upl_setlive', 'build.distributing')).at(-1)).toMatchObject({ event: 'build.distributing', status: 'Distribute' });
    const listed = await client.request('GET', `${base}/builds`);
    // No streaming server here: the distribution is over at once (Approved).
    expect((listed.json.builds as { uploadId: string; stages: { status: string }[] }[])[0]!.stages.map((s) => s.status)).toEqual(['Ready', 'Distributing to Servers', 'Approved']);

    // One build call per window and person: the owner's second call is refused with the wait.
    expect(await client.post(`${base}/builds/upl_setlive/distribute`)).toMatchObject({ status: 429 });
    expect(await client.post(`${base}/builds/upl_other/distribute`)).toMatchObject({ status: 404, json: { message: 'Upload not found' } });
    // A FULL member's Distribute, in their own window: the stage's own status.
    const member = await signedIn('mia@example.com');
    await t.cp.accounts.addMember(project.projectId, member.userId, 'FULL');
    expect(await member.client.post(`${base}/builds/upl_setlive/distribute`)).toMatchObject({ status: 200, json: { status: 'Distributing to Servers' } });
    const deliveries = await webhooks.until('upl_setlive', 'build.distributing', { count: 2 });
    expect(deliveries.filter((d) => d.event === 'build.distributing').map((d) => d.status)).toEqual(['Distribute', 'Distributing to Servers']);
  });

  it('pages the builds, newest first, 20 unless asked for another number (at most 100), each page with its own builds\' stages', async () => {
    const { client, userId } = await signedIn('paula@example.com');
    const project = await t.cp.accounts.createProject(userId, 'Many builds', 'europe');
    for (let i = 1; i <= 25; i++) seedBuild(t.cp, { uploadId: `upl_page_${String(i).padStart(2, '0')}`, projectId: project.projectId, status: 'Ready', createdAt: 1_000 + i });
    setBuildStatus(t.cp, 'upl_page_03', 'Approved');
    const base = `/dashboard/api/projects/${project.projectId}/builds`;
    const page = async (query: string) => {
      const answer = await client.request('GET', `${base}${query}`);
      expect(answer.status).toBe(200);
      const builds = answer.json.builds as { uploadId: string; stages: { status: string }[] }[];
      return { total: answer.json.total as number, ids: builds.map((b) => b.uploadId.replace('upl_page_', '')), stages: Object.fromEntries(builds.map((b) => [b.uploadId.replace('upl_page_', ''), b.stages.map((s) => s.status)])) };
    };
    const first = await page('');
    expect(first.total).toBe(25);
    expect(first.ids).toEqual(Array.from({ length: 20 }, (_, i) => String(25 - i).padStart(2, '0')));
    const second = await page('?skip=20');
    expect(second.ids).toEqual(['05', '04', '03', '02', '01']);
    expect(second.stages['03']).toEqual(['Ready', 'Approved']);
    expect(second.stages['04']).toEqual(['Ready']);
    expect((await page('?skip=25')).ids).toEqual([]);
    expect((await page('?limit=500')).ids).toHaveLength(25); // capped at 100, which all 25 are under
    expect((await page('?limit=3&skip=1')).ids).toEqual(['24', '23', '22']);
    expect(await client.request('GET', `${base}?limit=-1`)).toMatchObject({ status: 400, json: { message: 'Invalid field: limit must be a whole number of at least 0' } });
  });

  it("lists a project's sessions and shows one; another project's session is not found; End session needs write access", async () => {
    const owner = await signedIn('nora@example.com');
    const reader = await signedIn('ralf@example.com');
    const project = await t.cp.accounts.createProject(owner.userId, 'Sessions', 'europe');
    const other = await t.cp.accounts.createProject(owner.userId, 'Other', 'europe');
    await t.cp.accounts.addMember(project.projectId, reader.userId, 'READONLY');
    const running = seedSession(t.cp, { projectId: project.projectId, status: 'Running', workerId: 'wrk_x' });
    const elsewhere = seedSession(t.cp, { projectId: other.projectId, status: 'Running', workerId: 'wrk_x' });
    const base = `/dashboard/api/projects/${project.projectId}`;

    const listed = await reader.client.request('GET', `${base}/sessions?from=0&to=${Date.now() + 60_000}`);
    expect(listed.status).toBe(200);
    expect(listed.json).toMatchObject({ total: 1, sessions: [{ sessionId: running, status: 'Running', diagnosis: 'neverReported' }] });
    const badStatus = await reader.client.request('GET', `${base}/sessions?status=Sleeping`);
    expect(badStatus.status).toBe(400);
    expect(badStatus.json.message).toBe('Invalid field: status must be one of Enqueued, Starting, Running, Terminating, Terminated');
    expect(await reader.client.request('GET', `${base}/sessions?limit=-1`)).toMatchObject({ status: 400 });

    // The filters: what the viewer got (stored with the telemetry as it arrives), country, browser.
    const played = seedSession(t.cp, { projectId: project.projectId, status: 'Terminated', client: { browser: 'Firefox', os: 'Linux', country: 'France', countryCode: 'FR' } });
    const now = new Date().toISOString();
    seedTelemetry(t.cp, played, project.projectId, [
      { logType: 'Webrtc', event: 'connected', timestamp: now },
      { timestamp: now, framesDecoded: '240', FPS: '60' },
    ]);
    const window = `from=0&to=${Date.now() + 60_000}`;
    const filtered = async (filters: string) => {
      const answer = await reader.client.request('GET', `${base}/sessions?${window}&${filters}`);
      expect(answer.status).toBe(200);
      return { total: answer.json.total, totalExact: answer.json.totalExact, ids: (answer.json.sessions as { sessionId: string }[]).map((x) => x.sessionId) };
    };
    expect(await filtered('diagnosis=videoDelivered')).toEqual({ total: 1, totalExact: true, ids: [played] });
    expect(await filtered('diagnosis=neverReported')).toEqual({ total: 1, totalExact: true, ids: [running] });
    expect(await filtered('country=France&browser=Firefox')).toEqual({ total: 1, totalExact: true, ids: [played] });
    expect(await filtered('browser=Chrome')).toEqual({ total: 0, totalExact: true, ids: [] });
    expect(await filtered('status=Running&diagnosis=videoDelivered')).toEqual({ total: 0, totalExact: true, ids: [] });
    const badDiagnosis = await reader.client.request('GET', `${base}/sessions?diagnosis=great`);
    expect(badDiagnosis).toMatchObject({ status: 400, json: { message: 'Invalid field: diagnosis must be one of neverReported, telemetryExpired, mediaNeverConnected, connectedWithoutVideo, videoDelivered' } });
    expect(await reader.client.request('GET', `${base}/sessions?country=${'x'.repeat(101)}`)).toMatchObject({ status: 400, json: { message: 'Invalid field: country must be at most 100 characters' } });
    expect(await reader.client.request('GET', `${base}/sessions?skip=10000`)).toMatchObject({ status: 400, json: { message: 'Invalid field: skip must be under 10000: narrow the window or filter' } });
    // Past 10,000 matches the count stops and says so; the pages go as far as it.
    seedEndedSessions(t.cp, project.projectId, 10_000);
    expect(await filtered('status=Terminated')).toMatchObject({ total: 10_000, totalExact: false });
    // 10,001 ended: a page just under the cap reads on to the last of them.
    expect((await filtered('status=Terminated&skip=9990&limit=25')).ids).toHaveLength(11);
    expect(await filtered('browser=Firefox')).toEqual({ total: 1, totalExact: true, ids: [played] });

    const shown = await reader.client.request('GET', `${base}/sessions/${running}`);
    expect(shown.status).toBe(200);
    expect(shown.json).toMatchObject({ session: { sessionId: running, worker: 'wrk_x' }, stats: [], events: [], logFiles: [], statsLimit: 1000 });
    expect(await owner.client.request('GET', `${base}/sessions/${elsewhere}`)).toMatchObject({ status: 404, json: { message: 'Session not found' } });

    expect(await reader.client.post(`${base}/sessions/${running}/end`)).toMatchObject({ status: 403, json: { message: 'Forbidden: read-only access' } });
    expect(await owner.client.post(`${base}/sessions/${elsewhere}/end`)).toMatchObject({ status: 404, json: { message: 'Session not found' } });
    expect(t.cp.sessions.get(elsewhere).status).toBe('Running');
    // A session waiting in the line (a placed one would need its worker to be told).
    const waiting = seedSession(t.cp, { projectId: project.projectId, status: 'Enqueued' });
    expect(await owner.client.post(`${base}/sessions/${waiting}/end`)).toMatchObject({ status: 200, json: { sessionId: waiting, status: 'Terminated' } });
    expect(t.cp.sessions.get(waiting).status).toBe('Terminated');
  });

  it("keeps the team the owner's: members by e-mail, access changed, removal at once; FULL members may not touch it", async () => {
    const owner = await signedIn('tess@example.com');
    const full = await signedIn('uma@example.com');
    const project = await t.cp.accounts.createProject(owner.userId, 'Team', 'europe');
    await t.cp.accounts.addMember(project.projectId, full.userId, 'FULL');
    const base = `/dashboard/api/projects/${project.projectId}/members`;

    expect(await full.client.request('GET', base)).toMatchObject({ status: 403, json: { message: 'Forbidden' } });
    expect(await full.client.post(base, { email: 'vic@example.com', access: 'FULL' })).toMatchObject({ status: 403, json: { message: 'Forbidden' } });
    expect(await owner.client.post(base, { email: 'vic@example.com', access: 'ADMIN' })).toMatchObject({ status: 400, json: { message: 'Invalid field: access must be FULL or READONLY' } });
    expect(await owner.client.request('POST', base, { email: 'vic@example.com', access: 'FULL' })).toMatchObject({ status: 403, json: { message: 'Missing or invalid CSRF token' } });

    const added = await owner.client.post(base, { email: 'vic@example.com', access: 'READONLY' });
    expect(added.status).toBe(201);
    expect(added.json.invitationMailed).toBe(true);
    const vic = added.json.userId as string;
    expect((added.json.members as { email: string; access: string; joined: boolean }[]).map((m) => [m.email, m.access, m.joined])).toEqual([
      ['uma@example.com', 'FULL', true],
      ['vic@example.com', 'READONLY', false],
    ]);
    expect((await owner.client.patch(`${base}/${vic}`, { access: 'FULL' })).status).toBe(200);
    const listed = (await owner.client.request('GET', base)).json.members as { userId: string; access: string }[];
    expect(listed.find((m) => m.userId === vic)?.access).toBe('FULL');
    expect(await owner.client.patch(`${base}/usr_nobody`, { access: 'FULL' })).toMatchObject({ status: 400 });

    // Removed: the member's key and sign-in lose the project at their next request.
    const key = await t.cp.accounts.issueKey(full.userId);
    const rest = () => fetch(`${t.started.publicUrls.api}/projects/${project.projectId}/settings?${new URLSearchParams({ userId: full.userId, apikey: key }).toString()}`).then((r) => r.status);
    expect(await rest()).toBe(200);
    expect((await owner.client.post(`${base}/${full.userId}/remove`)).status).toBe(200);
    expect(await rest()).toBe(403);
    expect(await full.client.request('GET', `/dashboard/api/projects/${project.projectId}/settings`)).toMatchObject({ status: 403, json: { message: 'Access denied' } });
  });

  it("shows the end of a session's engine log from its first whole line, and downloads all of it", async () => {
    const { client, userId } = await signedIn('lena@example.com');
    const project = await t.cp.accounts.createProject(userId, 'Logs', 'europe');
    const other = await t.cp.accounts.createProject(userId, 'Other logs', 'europe');
    const now = Date.now();
    const sessionId = seedSessionHistory(t.cp, { projectId: project.projectId, statuses: [['Enqueued', now - 60_000], ['Terminated', now]] });
    // 5,000 numbered lines, about 250 KB: far more than the 64 KiB shown.
    const text = Array.from({ length: 5000 }, (_, i) => `[2026.11.29-12.00.00:000][  1]LogTemp: line ${i}`).join('\n') + '\n';
    const logFileId = await seedLogFile(t.cp, { sessionId, projectId: project.projectId, fileName: 'App.log', text, uploadedAt: now });
    const base = `/dashboard/api/projects/${project.projectId}`;

    const tail = await client.request('GET', `${base}/log-files/${logFileId}?tail=1`);
    expect(tail.status).toBe(200);
    const shown = tail.json.text as string;
    expect(tail.json).toMatchObject({ fileName: 'App.log', fileSize: Buffer.byteLength(text), truncated: true });
    expect(Buffer.byteLength(shown)).toBeLessThanOrEqual(64 * 1024);
    expect(shown).toMatch(/^\[2026\.11\.29-12\.00\.00:000\]\[  1\]LogTemp: line \d+\n/);
    expect(shown.endsWith('LogTemp: line 4999\n')).toBe(true);
    expect(text.endsWith(shown)).toBe(true);

    const whole = await fetch(`${t.started.httpOrigin}${base}/log-files/${logFileId}`, { headers: { cookie: [...client.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } });
    expect(whole.headers.get('content-disposition')).toBe('attachment; filename="App.log"');
    expect(await whole.text()).toBe(text);
    // Another project's path to the same file: not found.
    expect(await client.request('GET', `/dashboard/api/projects/${other.projectId}/log-files/${logFileId}?tail=1`)).toMatchObject({ status: 404, json: { message: 'Log file not found' } });
  });
});
