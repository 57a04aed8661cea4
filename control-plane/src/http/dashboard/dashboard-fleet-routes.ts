// The operators' side of the dashboard: a signed-in person who shows the admin token gets an
// operator sign-in for OPERATOR_SESSION_MS (the token is checked in constant time and never kept;
// wrong tokens are counted per client network), and with it the fleet: every streaming server with
// its link, slots in use, draining and agent version; drain and undrain. Customers never see it.
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { DashboardFleet, DashboardWorker } from '@pixelfleet/dashboard';
import type { Clock } from '@pixelfleet/common';
import { ApiError } from '../../errors';
import { clientBlock } from '../../lib/ip-address';
import { secretsEqual } from '../../lib/secrets';
import type { PeopleService } from '../../people/people-service';
import { KeyedBuckets } from '../../people/sign-in-throttle';
import type { WorkerRegistry, WorkerView } from '../../workers/registry';
import { bodyObject, requiredString } from '../api/request-fields';
import type { DashboardGuards } from './dashboard-auth-routes';

export interface DashboardFleetDeps {
  guards: DashboardGuards;
  people: Pick<PeopleService, 'grantOperator' | 'isOperatorSession'>;
  registry: Pick<WorkerRegistry, 'list' | 'drain' | 'undrain'>;
  adminToken: string;
  clock: Pick<Clock, 'now'>;
}

/** Wrong admin tokens per client network: three back to back, then one a minute. */
export const OPERATOR_TOKEN_FAILURES = { burst: 3, perSecond: 1 / 60 };

type WorkerParams = { Params: { workerId: string } };

export function registerDashboardFleetRoutes(app: FastifyInstance, deps: DashboardFleetDeps, basePath = '/dashboard'): void {
  const { guards } = deps;
  const failures = new KeyedBuckets(OPERATOR_TOKEN_FAILURES, deps.clock);
  const write = { onRequest: guards.limited, preHandler: guards.sameSite };

  /** 401 unless signed in, then 403 unless the sign-in is an operator's. */
  const operator = async (req: FastifyRequest): Promise<void> => {
    const { token } = await guards.signedInUser(req);
    if (!(await deps.people.isOperatorSession(token))) throw new ApiError('dashboardOperatorOnly');
  };

  app.post(`${basePath}/api/operator`, write, async (req, reply) => {
    const { token } = await guards.signedInUser(req);
    const network = clientBlock(req.ip);
    const wait = failures.peek(network)?.waitMs() ?? 0;
    if (wait > 0) {
      const seconds = Math.ceil(wait / 1000);
      throw new ApiError('dashboardOperatorThrottled', { seconds }, { 'retry-after': String(seconds) });
    }
    const presented = requiredString(bodyObject(req.body), 'adminToken', 1024);
    if (!secretsEqual(presented, deps.adminToken)) {
      failures.get(network).take();
      throw new ApiError('dashboardOperatorRefused');
    }
    return reply.header('cache-control', 'no-store').send({ operatorUntil: await deps.people.grantOperator(token) });
  });

  app.get(`${basePath}/api/fleet`, { onRequest: guards.limited }, async (req, reply) => {
    await operator(req);
    const answer: DashboardFleet = { workers: deps.registry.list().map(workerOf) };
    return reply.header('cache-control', 'no-store').send(answer);
  });

  for (const action of ['drain', 'undrain'] as const) {
    app.post<WorkerParams>(`${basePath}/api/fleet/workers/:workerId/${action}`, write, async (req, reply) => {
      await operator(req);
      return reply.send(workerOf(deps.registry[action](req.params.workerId)));
    });
  }
}

function workerOf(w: WorkerView): DashboardWorker {
  return {
    workerId: w.workerId,
    hostname: w.hostname,
    region: w.region,
    status: w.status,
    draining: w.draining,
    slots: w.slots,
    usedSlots: w.usedSlots,
    agentVersion: w.agentVersion,
    lastSeenAt: w.lastSeenAt ?? null,
  };
}
