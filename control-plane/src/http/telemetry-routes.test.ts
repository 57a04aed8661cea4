// The telemetry route's per-session budget when its store answers later (over a socket): two
// batches of one session posted at once are taken one after the other, so they never both pass the
// budget on the same usage, and only the first carries the server's client details. (The route's
// statuses and budgets on the real control plane: test/integration/telemetry-budget.test.ts.)
import { setImmediate as nextTurn } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { storedRowBytes, type StoredTelemetryRow, type TelemetryRepository, type TelemetryRowRecord, type TelemetryUsage } from '../repositories/telemetry';
import type { SessionRecord } from '../repositories/sessions';
import type { SessionService } from '../sessions/session-service';
import { registerTelemetryRoutes, TELEMETRY_PATH } from './telemetry-routes';

/** Rows kept in memory; every answer comes a turn of the event loop later, as a database server's would. */
class LaterTelemetry implements TelemetryRepository {
  readonly rows: TelemetryRowRecord[] = [];

  async insertMany(rows: readonly TelemetryRowRecord[]): Promise<void> {
    await nextTurn();
    this.rows.push(...rows);
  }

  async usageBySession(sessionId: string): Promise<TelemetryUsage> {
    await nextTurn();
    const mine = this.rows.filter((r) => r.sessionId === sessionId);
    return { rows: mine.length, bytes: mine.reduce((n, r) => n + storedRowBytes(r.row), 0) };
  }

  listBySession(): Promise<StoredTelemetryRow[]> {
    return Promise.reject(new Error('not read by the route'));
  }

  pageBySession(): Promise<{ total: number; rows: StoredTelemetryRow[] }> {
    return Promise.reject(new Error('not read by the route'));
  }
}

const SESSION_ID = 'session_1_1';
const TOKEN = 'viewer-token';
const BUDGET = 3_000;

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

function routeOver(telemetry: TelemetryRepository): FastifyInstance {
  const session = {
    sessionId: SESSION_ID,
    projectId: 'prj_1',
    status: 'Running',
    placedAt: 1,
    updatedAt: 1,
    client: { browser: 'Chrome', os: 'Linux' },
  } as unknown as SessionRecord;
  const sessions = {
    get: () => session,
    viewerTokenMatches: (_sessionId: string, token: string) => token === TOKEN,
    sessionOfViewerToken: () => undefined,
  } as unknown as SessionService;
  const limits = { bytesPerSession: BUDGET, bytesWhileQueued: BUDGET, addressBytesBurst: 10_000_000, addressBytesPerSecond: 10_000_000 };
  app = Fastify();
  registerTelemetryRoutes(app, { sessions, telemetry, clock: new ManualClock(1_000), limits });
  return app;
}

/** A statistics row whose stored JSON is about `bytes` long. */
const statsRow = (bytes: number) => ({ timestamp: '2026-11-21T06:00:05.000Z', FPS: '30', padding: 'x'.repeat(bytes - 120) });
const eventRow = { timestamp: '2026-11-21T06:00:05.000Z', logType: 'Webrtc', event: 'connected' };

const post = (route: FastifyInstance, rows: Record<string, unknown>[]) =>
  route.inject({ method: 'POST', url: TELEMETRY_PATH, headers: { 'x-viewer-token': TOKEN }, payload: { sessionId: SESSION_ID, rows } });

describe('telemetry route over a store that answers later', () => {
  it('takes two batches of one session posted at once one after the other: the second is refused when both would pass the budget', async () => {
    const telemetry = new LaterTelemetry();
    const route = routeOver(telemetry);

    const answers = await Promise.all([post(route, [statsRow(2_000)]), post(route, [statsRow(2_000)])]);

    expect(answers.map((a) => a.statusCode).sort()).toEqual([204, 429]);
    expect(answers.find((a) => a.statusCode === 429)?.json()).toEqual({ message: 'Telemetry limit reached for this session' });
    expect(telemetry.rows).toHaveLength(1);
    expect((await telemetry.usageBySession(SESSION_ID)).bytes).toBeLessThanOrEqual(BUDGET);
  });

  it('puts the client details on the first batch only, however close together the batches come', async () => {
    const telemetry = new LaterTelemetry();
    const route = routeOver(telemetry);

    const answers = await Promise.all([post(route, [eventRow]), post(route, [eventRow])]);

    expect(answers.map((a) => a.statusCode)).toEqual([204, 204]);
    expect(telemetry.rows.map((r) => r.row.browser)).toEqual(['Chrome', undefined]);
  });
});
