// The webhook contract against the spec's Envelope and Event kinds tables (from the spec when it is
// beside the repository, else from the committed copy; build-stages.test.ts checks the copy).
import { describe, expect, it } from 'vitest';
import { specSection, tableAfter } from '../lib/spec-sections';
import { BUILD_EVENTS, TEST_EVENT, WEBHOOK_EVENTS, buildEventEnvelope, isWebhookEvent, testEventEnvelope } from './webhook-envelope';

const events = specSection(new URL('./spec-events.fixture.md', import.meta.url), '### Envelope', '## Errors');
const ticked = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!);
const firstTicked = (rows: string[][]) => rows.map(([cell = '']) => ticked(cell)[0]);

describe('the event names', () => {
  it("are the spec's Event kinds, in its order, the test event last", () => {
    expect([...WEBHOOK_EVENTS]).toEqual(firstTicked(tableAfter(events.text, '### Event kinds')));
    expect(WEBHOOK_EVENTS.at(-1)).toBe(TEST_EVENT);
    expect(BUILD_EVENTS.every((e) => e.startsWith('build.'))).toBe(true);
  });

  it('tells a known event name from anything else', () => {
    for (const name of WEBHOOK_EVENTS) expect(isWebhookEvent(name)).toBe(true);
    for (const name of ['build.Uploaded', 'build.local', 'project.enabled', '', 42, null]) expect(isWebhookEvent(name)).toBe(false);
  });
});

describe('the envelope', () => {
  const fields = firstTicked(tableAfter(events.text, '### Envelope'));

  it("has the spec's fields, in its order, on a build event", () => {
    const envelope = buildEventEnvelope('build.rejected', 'Reject', { projectId: 'prj_1', uploadId: 'upl_1', fileUrl: undefined, objection: 'no binary' }, Date.UTC(2026, 0, 2, 3, 4, 5));
    expect(Object.keys(envelope)).toEqual(fields);
    expect(envelope).toEqual({ event: 'build.rejected', projectId: 'prj_1', uploadId: 'upl_1', fileUrl: null, status: 'Reject', objection: 'no binary', timestamp: '2026-01-02T03:04:05.000Z' });
  });

  it('is the same shape on the test event, with placeholder ids and status test', () => {
    const envelope = testEventEnvelope(0);
    expect(Object.keys(envelope)).toEqual(fields);
    expect(envelope).toEqual({ event: 'webhook.test', projectId: 'prj_webhook_test', uploadId: 'upl_webhook_test', fileUrl: null, status: 'test', objection: null, timestamp: '1970-01-01T00:00:00.000Z' });
    expect(events.text).toContain('The `webhook.test` payload uses placeholder values for `projectId` and `uploadId` that match no real records');
    expect(tableAfter(events.text, '### Event kinds').find(([e]) => e === '`webhook.test`')?.[2]).toBe('`test`');
  });
});
