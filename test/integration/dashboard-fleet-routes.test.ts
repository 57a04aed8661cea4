// The operators' fleet in the dashboard over real HTTP: a sign-in becomes an operator's only by
// showing the admin token (wrong ones counted per network: three, then the wait), for an hour;
// customers get 403 on the fleet; an operator lists a real agent and drains and undrains it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { startTestControlPlane, TEST_ADMIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { type DashboardClient, signedInPerson } from '../support/dashboard-client';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';

const PASSWORD = 'correct horse battery';
const clock = new ManualClock(Date.parse('2026-11-29T12:00:00Z'));
let t: TestControlPlane;

beforeAll(async () => {
  t = await startTestControlPlane({ clock });
});

afterAll(async () => {
  await t?.destroy();
});

async function signedIn(email: string): Promise<DashboardClient> {
  return (await signedInPerson(t, email, PASSWORD)).client;
}

describe('the fleet in the dashboard', () => {
  it('is for sign-ins that showed the admin token, for an hour; wrong tokens are counted per network', async () => {
    const customer = await signedIn('cora@example.com');
    expect(await customer.request('GET', '/dashboard/api/fleet')).toMatchObject({ status: 403, json: { message: 'Operators only: confirm the admin token on the Account page' } });
    expect((await customer.request('GET', '/dashboard/api/me')).json).toMatchObject({ operator: false });
    for (let i = 0; i < 3; i += 1) expect(await customer.post('/dashboard/api/operator', { adminToken: `guess-${i}` })).toMatchObject({ status: 403, json: { message: 'Wrong admin token' } });
    // The network's wrong tokens are spent: even the right one waits (it is not checked).
    const throttled = await customer.post('/dashboard/api/operator', { adminToken: TEST_ADMIN_TOKEN });
    expect(throttled).toMatchObject({ status: 429, json: { message: 'Too many wrong admin tokens. Try again in 60 seconds.' } });
    clock.advance(60_000);

    const operator = await signedIn('otis@example.com');
    expect(await operator.request('POST', '/dashboard/api/operator', { adminToken: TEST_ADMIN_TOKEN })).toMatchObject({ status: 403, json: { message: 'Missing or invalid CSRF token' } });
    const granted = await operator.post('/dashboard/api/operator', { adminToken: TEST_ADMIN_TOKEN });
    expect(granted).toMatchObject({ status: 200, json: { operatorUntil: clock.now() + 3_600_000 } });
    expect((await operator.request('GET', '/dashboard/api/me')).json).toMatchObject({ operator: true });

    // A real agent: listed with its link and slots; drained, then undrained.
    const script = new ScriptedSessions();
    const { agent } = await startTestAgent({ grpcAddress: t.started.grpcAddress, slots: 2, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal });
    script.agent = agent;
    try {
      await linkReaches(agent, 'connected');
      const fleet = await operator.request('GET', '/dashboard/api/fleet');
      expect(fleet.status).toBe(200);
      const [worker] = fleet.json.workers as { workerId: string; status: string; slots: number; usedSlots: number; draining: boolean }[];
      expect(worker).toMatchObject({ status: 'connected', slots: 2, usedSlots: 0, draining: false });
      expect((await operator.post(`/dashboard/api/fleet/workers/${worker!.workerId}/drain`)).json).toMatchObject({ draining: true, status: 'draining' });
      expect(t.cp.registry.get(worker!.workerId).draining).toBe(true);
      expect(await customer.post(`/dashboard/api/fleet/workers/${worker!.workerId}/undrain`)).toMatchObject({ status: 403 });
      expect((await operator.post(`/dashboard/api/fleet/workers/${worker!.workerId}/undrain`)).json).toMatchObject({ draining: false });
      expect(await operator.post('/dashboard/api/fleet/workers/wrk_nope/drain')).toMatchObject({ status: 404 });
    } finally {
      await agent.close();
    }

    // An hour later the sign-in is a customer's again.
    clock.advance(3_600_000);
    expect(await operator.request('GET', '/dashboard/api/fleet')).toMatchObject({ status: 403 });
  });
});
