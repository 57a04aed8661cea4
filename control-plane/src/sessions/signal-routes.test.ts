import pino from 'pino';
import { describe, expect, it } from 'vitest';
import type { SignalEnvelope } from '@pixelfleet/proto';
import type { SessionRecord } from '../repositories/sessions';
import type { SessionStatus } from './session-status';
import { SignalRoutes } from './signal-routes';

const silent = pino({ level: 'silent' });

function session(status: SessionStatus, assignedWorker: string | undefined, sessionId = 'session_1_1'): SessionRecord {
  return {
    sessionId, projectId: 'prj_1', region: 'europe', status, assignedWorker, streamingId: 'streamer_1_1', playerId: 'player_1_1',
    maxRunTime: undefined, endReason: undefined, createdAt: 0, updatedAt: 0,
  };
}

describe('SignalRoutes', () => {
  it('routes a viewer to its relay from placement until the session begins ending', () => {
    const routes = new SignalRoutes(() => true, silent);
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
    const routes = new SignalRoutes(() => true, silent);
    routes.track(session('Running', 'wrk_a'));
    expect(routes.heldBy('session_1_1', 'wrk_a')).toBe(true);
    expect(routes.heldBy('session_1_1', 'wrk_b')).toBe(false);
    routes.track(session('Terminating', 'wrk_a'));
    expect(routes.heldBy('session_1_1', 'wrk_a')).toBe(true);
    routes.track(session('Terminated', 'wrk_a'));
    expect(routes.heldBy('session_1_1', 'wrk_a')).toBe(false);
    expect(routes.heldBy('session_2_2', 'wrk_a')).toBe(false);
  });

  it("holds a viewer's signals while its worker's link is down and sends them, in order, when it is back; an ending session's are dropped", () => {
    const sent: [string, SignalEnvelope][] = [];
    let linkUp = false;
    const routes = new SignalRoutes((workerId, envelope) => {
      if (linkUp) sent.push([workerId, envelope]);
      return linkUp;
    }, silent);
    expect(routes.toAgent('session_1_1', { type: 'subscribe', streamerId: 'streamer_1_1' })).toBe(false); // not placed yet
    routes.track(session('Starting', 'wrk_a'));
    routes.track(session('Starting', 'wrk_a', 'session_2_2'));
    expect(routes.toAgent('session_1_1', { type: 'subscribe', streamerId: 'streamer_1_1' })).toBe(true);
    expect(routes.toAgent('session_1_1', { type: 'answer', sdp: 'v=0' })).toBe(true);
    expect(routes.toAgent('session_2_2', { type: 'subscribe', streamerId: 'streamer_1_1' })).toBe(true);
    routes.track(session('Terminating', 'wrk_a', 'session_2_2'));
    expect(sent).toEqual([]);

    linkUp = true;
    expect(routes.sendHeldFor('wrk_b')).toBe(0);
    expect(routes.sendHeldFor('wrk_a')).toBe(2);
    expect(sent.map(([workerId, e]) => [workerId, e.sessionId, e.playerId, (JSON.parse(e.json) as { type: string }).type])).toEqual([
      ['wrk_a', 'session_1_1', 'player_1_1', 'subscribe'],
      ['wrk_a', 'session_1_1', 'player_1_1', 'answer'],
    ]);
    expect(routes.sendHeldFor('wrk_a')).toBe(0);
  });
});
