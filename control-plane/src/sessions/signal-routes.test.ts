import { describe, expect, it } from 'vitest';
import type { SessionRecord } from '../repositories/sessions';
import type { SessionStatus } from './session-status';
import { SignalRoutes } from './signal-routes';

function session(status: SessionStatus, assignedWorker: string | undefined): SessionRecord {
  return {
    sessionId: 'session_1_1', projectId: 'prj_1', region: 'europe', status, assignedWorker, streamingId: 'streamer_1_1', playerId: 'player_1_1',
    maxRunTime: undefined, endReason: undefined, createdAt: 0, updatedAt: 0,
  };
}

describe('SignalRoutes', () => {
  it('routes a viewer to its relay from placement until the session begins ending', () => {
    const routes = new SignalRoutes();
    routes.track(session('Enqueued', undefined));
    expect(routes.toRelay('session_1_1')).toBeUndefined();
    routes.track(session('Starting', 'wrk_a'));
    expect(routes.toRelay('session_1_1')).toMatchObject({ workerId: 'wrk_a', playerId: 'player_1_1' });
    routes.track(session('Running', 'wrk_a'));
    expect(routes.toRelay('session_1_1')).toMatchObject({ workerId: 'wrk_a', playerId: 'player_1_1' });
    routes.track(session('Terminating', 'wrk_a'));
    expect(routes.toRelay('session_1_1')).toBeUndefined();
  });

  it('hears the holding worker until the session is Terminated, and no other worker', () => {
    const routes = new SignalRoutes();
    routes.track(session('Running', 'wrk_a'));
    expect(routes.heldBy('session_1_1', 'wrk_a')).toBe(true);
    expect(routes.heldBy('session_1_1', 'wrk_b')).toBe(false);
    routes.track(session('Terminating', 'wrk_a'));
    expect(routes.heldBy('session_1_1', 'wrk_a')).toBe(true);
    routes.track(session('Terminated', 'wrk_a'));
    expect(routes.heldBy('session_1_1', 'wrk_a')).toBe(false);
    expect(routes.heldBy('session_2_2', 'wrk_a')).toBe(false);
  });
});
