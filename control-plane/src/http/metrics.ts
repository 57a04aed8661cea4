// Prometheus metrics: process defaults plus fleet gauges read at scrape time and HTTP
// request counts by route.
import { Counter, Gauge, Registry, collectDefaultMetrics } from 'prom-client';
import type { WorkerRegistry } from '../workers/registry';

export interface Metrics {
  registry: Registry;
  httpRequests: Counter<'method' | 'route' | 'status'>;
}

export function createMetrics(workers: WorkerRegistry): Metrics {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: 'pixelfleet_' });
  const httpRequests = new Counter({
    name: 'pixelfleet_http_requests_total',
    help: 'HTTP requests answered, by method, route and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [registry],
  });
  new Gauge({
    name: 'pixelfleet_workers',
    help: 'Enrolled workers by status',
    labelNames: ['status'] as const,
    registers: [registry],
    collect() {
      this.reset();
      for (const s of ['connected', 'disconnected', 'unreachable', 'draining'] as const) this.set({ status: s }, 0);
      for (const w of workers.list()) this.inc({ status: w.status });
    },
  });
  new Gauge({
    name: 'pixelfleet_agent_streams',
    help: 'Open agent Connect streams',
    registers: [registry],
    collect() {
      this.set(workers.liveStreamCount());
    },
  });
  return { registry, httpRequests };
}
