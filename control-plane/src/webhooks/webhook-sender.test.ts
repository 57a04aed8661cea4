// The webhook sender against a real local receiver: one POST, no retry, a 10 s timeout on the
// injected clock, every attempt recorded; a rebinding host name never reaches loopback.
import { createServer, type Server } from 'node:http';
import { createServer as createTcpServer, type AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import pino from 'pino';
import { ManualClock, systemClock } from '@pixelfleet/common';
import type { ProjectsRepository, ProjectWebhook } from '../repositories/projects';
import type { WebhookDeliveriesRepository, WebhookDelivery } from '../repositories/webhook-deliveries';
import type { HostResolver } from './url-policy';
import type { WebhookEnvelope } from './webhook-envelope';
import { WebhookSender } from './webhook-sender';

const envelope: WebhookEnvelope = { event: 'build.ready', projectId: 'prj_1', uploadId: 'upl_1', fileUrl: null, status: 'Ready', objection: null, timestamp: '2026-01-01T00:00:00.000Z' };

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
  server = undefined;
});

async function receiver(handler: Parameters<typeof createServer>[1]): Promise<string> {
  server = createServer(handler);
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
}

function sender(clock: ManualClock, webhook: ProjectWebhook, allowPrivateUrls = true) {
  const deliveries: WebhookDelivery[] = [];
  const repo: WebhookDeliveriesRepository = {
    insert: (d) => {
      deliveries.push(d);
      return Promise.resolve();
    },
    listByProject: () => Promise.resolve(deliveries),
  };
  const projects = { webhook: () => webhook } as unknown as ProjectsRepository;
  const s = new WebhookSender({ projects, deliveries: repo, clock, policy: { allowPrivateUrls, resolve: () => Promise.resolve([]) }, log: pino({ level: 'silent' }) });
  return { s, deliveries };
}

describe('WebhookSender', () => {
  it('gives up after 10 s without retrying, and records the timeout', async () => {
    const clock = new ManualClock();
    let requests = 0;
    let arrived!: () => void;
    const arrival = new Promise<void>((resolve) => (arrived = resolve));
    const url = await receiver(() => {
      requests += 1;
      arrived(); // never answers
    });
    const { s, deliveries } = sender(clock, { url, events: undefined });
    const outcome = s.deliver('prj_1', url, envelope);
    await arrival;
    clock.advance(9_999);
    clock.advance(1);
    expect(await outcome).toMatchObject({ delivered: false, statusCode: undefined, failure: 'timedOut', error: 'timed out after 10000 ms', durationMs: 10_000 });
    await s.idle();
    expect(requests).toBe(1);
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]).toMatchObject({ projectId: 'prj_1', event: 'build.ready', uploadId: 'upl_1', error: 'timed out after 10000 ms' });
  });

  it("delivers a build's events one after another, in order, without holding up another build's", async () => {
    const clock = new ManualClock();
    const arrivals: string[] = [];
    let firstArrived!: () => void;
    const first = new Promise<void>((resolve) => (firstArrived = resolve));
    const url = await receiver((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const e = JSON.parse(body) as { event: string; uploadId: string };
        arrivals.push(`${e.uploadId} ${e.event}`);
        if (e.event === 'build.downloading' && e.uploadId === 'upl_1') firstArrived(); // never answered: it times out
        else res.writeHead(204).end();
      });
    });
    const { s, deliveries } = sender(clock, { url, events: undefined });
    s.emit('prj_1', { ...envelope, event: 'build.downloading', status: 'Downloading Files' });
    s.emit('prj_1', { ...envelope, event: 'build.extracting', status: 'Extracting & Scanning' });
    s.emit('prj_1', { ...envelope, uploadId: 'upl_2', event: 'build.uploaded', status: 'pending' });
    await first;
    clock.advance(10_000);
    await s.idle();
    expect(arrivals.filter((a) => a.startsWith('upl_1'))).toEqual(['upl_1 build.downloading', 'upl_1 build.extracting']);
    const attemptedAt = new Map(deliveries.map((d) => [`${d.uploadId} ${d.event}`, d.attemptedAt]));
    const start = attemptedAt.get('upl_1 build.downloading')!;
    // The second event of upl_1 started only once the first had timed out; upl_2's did not wait.
    expect(attemptedAt.get('upl_1 build.extracting')).toBe(start + 10_000);
    expect(attemptedAt.get('upl_2 build.uploaded')).toBe(start);
  });

  it('resolves a delivery only once its attempt is recorded (a build\'s next delivery waits for it); a record the store refuses is logged', async () => {
    const url = await receiver((_req, res) => res.writeHead(204).end());
    const steps: string[] = [];
    let refuse = false;
    const errors: string[] = [];
    const log = pino({ level: 'error' }, { write: (line: string) => void errors.push((JSON.parse(line) as { msg: string }).msg) });
    const s = new WebhookSender({
      projects: { webhook: () => ({ url, events: undefined }) } as unknown as ProjectsRepository,
      deliveries: {
        // The store answers a turn of the event loop later, as a database over a socket does.
        insert: async (d) => {
          steps.push(`recording ${d.event}`);
          await new Promise((resolve) => setImmediate(resolve));
          if (refuse) throw new Error('the database did not answer');
          steps.push(`recorded ${d.event}`);
        },
        listByProject: () => Promise.resolve([]),
      },
      clock: new ManualClock(),
      policy: { allowPrivateUrls: true, resolve: () => Promise.resolve([]) },
      log,
    });
    const outcome = await s.deliver('prj_1', url, envelope);
    steps.push('resolved');
    expect(outcome).toMatchObject({ delivered: true, statusCode: 204 });
    expect(steps).toEqual(['recording build.ready', 'recorded build.ready', 'resolved']);
    refuse = true;
    expect(await s.deliver('prj_1', url, envelope)).toMatchObject({ delivered: true, statusCode: 204 });
    expect(errors).toEqual(['webhook delivery could not be recorded']);
  });

  it('emits only events the project subscribed to', async () => {
    const clock = new ManualClock();
    const got: string[] = [];
    const url = await receiver((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        got.push((JSON.parse(text) as WebhookEnvelope).event);
        res.end();
      });
    });
    const { s } = sender(clock, { url, events: ['build.approved'] });
    s.emit('prj_1', envelope);
    s.emit('prj_1', { ...envelope, event: 'build.approved', status: 'Approved' });
    await s.idle();
    expect(got).toEqual(['build.approved']);
  });

  it('refuses a private target at send time when private URLs are not allowed', async () => {
    const clock = new ManualClock();
    const url = await receiver((_req, res) => res.end());
    const { s } = sender(clock, { url, events: undefined }, false);
    expect(await s.deliver('prj_1', url.replace('http:', 'https:'), envelope)).toMatchObject({ delivered: false, failure: 'refused', error: expect.stringContaining('webhook URL refused') as string });
  });

  it('connects only to the address the policy checked: a name answering public, then 127.0.0.1, never reaches loopback', async () => {
    let loopbackConnections = 0;
    const loopback = createTcpServer((socket) => {
      loopbackConnections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => loopback.listen(0, '127.0.0.1', resolve));
    const port = (loopback.address() as AddressInfo).port;
    let lookups = 0;
    const rebinding: HostResolver = () => Promise.resolve(lookups++ === 0 ? ['93.184.216.34'] : ['127.0.0.1']);
    const deliveries: WebhookDelivery[] = [];
    const s = new WebhookSender({
      projects: {} as ProjectsRepository,
      deliveries: {
        insert: (d) => {
          deliveries.push(d);
          return Promise.resolve();
        },
        listByProject: () => Promise.resolve(deliveries),
      },
      // Real time with a short cap: under test/run-isolated.mjs the public address is unreachable
      // at once; without the namespace the cap ends an attempt that went out to it.
      clock: systemClock,
      timeoutMs: 2_000,
      policy: { allowPrivateUrls: false, resolve: rebinding },
      log: pino({ level: 'silent' }),
    });
    try {
      const outcome = await s.deliver('prj_1', `https://rebind.example.test:${port}/hook`, envelope);
      expect(outcome.delivered).toBe(false);
      expect(outcome.error).not.toContain('127.0.0.1');
      expect(loopbackConnections).toBe(0);
      expect(lookups).toBe(1);
    } finally {
      await new Promise<void>((resolve) => loopback.close(() => resolve()));
    }
  });
});
