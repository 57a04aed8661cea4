// The project service on a real SQLite file and event log: enable/disable is idempotent (one
// fleet event per real change) and disable always ends the project's sessions; a settings patch is
// checked as merged before anything is written; the webhook test sends the one test envelope.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openDatabase, type Db } from '../db/database';
import { EventLog } from '../events/event-log';
import { ManualClock } from '@pixelfleet/common';
import { SqliteEventsRepository, type EventsRepository } from '../repositories/events';
import { promised } from '../store/promised';
import { SqliteProjectsRepository } from '../repositories/projects';
import { seedUser, seedProject } from '../repositories/repository-test-db';
import type { DeliveryOutcome } from '../webhooks/webhook-sender';
import type { WebhookEnvelope } from '../webhooks/webhook-envelope';
import { ProjectService } from './project-service';
import { parseSettingsPatch } from './settings-patch';

const silent = pino({ level: 'silent' });
let dir: string;
let db: Db;
let projects: SqliteProjectsRepository;
let service: ProjectService;
let ended: string[];
let delivered: { url: string; envelope: WebhookEnvelope }[];
const clock = new ManualClock();

const eventTypes = () => (db.prepare("SELECT type FROM events WHERE project_id = 'prj_1' ORDER BY id").all() as { type: string }[]).map((r) => r.type);
const project = () => projects.findById('prj_1')!;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'pf-project-service-'));
  db = openDatabase(join(dir, 'cp.sqlite'));
  seedUser(db);
  seedProject(db, 'prj_1');
  projects = new SqliteProjectsRepository(db);
  ended = [];
  delivered = [];
  const outcome: DeliveryOutcome = { delivered: true, statusCode: 200, failure: undefined, error: undefined, durationMs: 3 };
  service = new ProjectService({
    projects,
    sessions: { endProjectSessions: (projectId) => ended.push(projectId), warmPoolSettingsChanged: () => undefined },
    events: new EventLog(promised<EventsRepository>(new SqliteEventsRepository(db)), clock, silent),
    webhooks: { deliver: (_projectId, url, envelope) => (delivered.push({ url, envelope }), Promise.resolve(outcome)) },
    urlPolicy: { allowPrivateUrls: false, resolve: () => Promise.resolve(['93.184.216.34']) },
    clock,
  });
});

afterEach(() => {
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('ProjectService', () => {
  it('records one event per real change of enabled, and ends the sessions on every disable', () => {
    service.setEnabled(project(), false, 'usr_1');
    service.setEnabled(project(), false, 'usr_1');
    service.setEnabled(project(), true, 'usr_1');
    service.setEnabled(project(), true, 'usr_1');
    expect(eventTypes()).toEqual(['project.disabled', 'project.enabled']);
    expect(ended).toEqual(['prj_1', 'prj_1']);
    expect(project().enabled).toBe(true);
  });

  it('checks the merged settings and the webhook URL before writing anything', async () => {
    await service.updateSettings(project(), parseSettingsPatch({ maxBitrate: 2_000_000 }, 'prj_1'), 'usr_1');
    await expect(service.updateSettings(project(), parseSettingsPatch({ name: 'renamed', minBitrate: 3_000_000 }, 'prj_1'), 'usr_1')).rejects.toMatchObject({
      status: 400,
      message: 'Invalid field: minBitrate (3000000) must not exceed maxBitrate (2000000)',
    });
    await expect(service.updateSettings(project(), parseSettingsPatch({ name: 'renamed', webhookUrl: 'https://10.0.0.1/hook' }, 'prj_1'), 'usr_1')).rejects.toMatchObject({ status: 400 });
    expect(project().name).toBe('p');
    expect(eventTypes()).toEqual(['project.settings']);
    const { project: updated, webhook } = await service.updateSettings(project(), parseSettingsPatch({ projectId: 'prj_1', webhookUrl: 'https://hooks.example.com/h', webhookEvents: ['build.ready'] }, 'prj_1'), 'usr_1');
    expect([updated.settings.maxBitrate, webhook]).toEqual([2_000_000, { url: 'https://hooks.example.com/h', events: ['build.ready'] }]);
    expect(db.prepare("SELECT data FROM events WHERE type = 'project.settings' ORDER BY id DESC LIMIT 1").get()).toEqual({
      data: JSON.stringify({ userId: 'usr_1', fields: ['projectId', 'webhookUrl', 'webhookEvents'] }),
    });
  });

  it('sends the test envelope to the configured URL, and answers 404 without one', async () => {
    expect(() => service.testWebhook('prj_1')).toThrow('Webhook URL not configured');
    projects.setWebhook('prj_1', { url: 'https://hooks.example.com/h', events: ['build.ready'] });
    await service.testWebhook('prj_1');
    expect(delivered).toEqual([
      { url: 'https://hooks.example.com/h', envelope: { event: 'webhook.test', projectId: 'prj_webhook_test', uploadId: 'upl_webhook_test', fileUrl: null, status: 'test', objection: null, timestamp: new Date(clock.now()).toISOString() } },
    ]);
  });
});
