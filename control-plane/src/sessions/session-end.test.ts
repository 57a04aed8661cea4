// The close a viewer hears when a session ends: the table's code and reason, and the app's own
// words after it when the app disconnected the viewer, always within a close frame's 123 bytes.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_CLOSE_REASON_BYTES, VIEWER_CLOSES } from '@pixelfleet/signaling';
import { SESSION_END, closeForEndReason, viewerCloseFor } from './session-end';
import { QUEUE_FULL, RESUME_NOT_FIRST, RESUME_REFUSED, TOO_MANY_FROM_ADDRESS, TOO_MANY_ICE_CANDIDATES } from '../share/viewer-gateway';

/** The closes of the one table, as frames. */
const tableCloses = Object.values(VIEWER_CLOSES).map(({ code, reason }) => ({ code, reason }));

describe('every close the control plane sends a viewer is in the table', () => {
  it.each(Object.entries(SESSION_END))('SESSION_END.%s', (_cause, { close }) => {
    expect(tableCloses).toContainEqual(close);
  });

  it("the gateway's named closes", () => {
    for (const close of [QUEUE_FULL, RESUME_NOT_FIRST, RESUME_REFUSED, TOO_MANY_FROM_ADDRESS, TOO_MANY_ICE_CANDIDATES]) expect(tableCloses).toContainEqual(close);
  });

  it('the gateway and the session ends close with table entries, never with a number or a reason of their own', () => {
    for (const file of ['../share/viewer-gateway.ts', './session-end.ts']) {
      const source = readFileSync(new URL(file, import.meta.url), 'utf8');
      expect(source).not.toMatch(/\.close\(\s*\d/);
      expect(source).not.toMatch(/\.close\([^)]*,\s*'/);
      expect(source).not.toMatch(/\bcode:\s*\d/);
    }
  });
});

describe('viewerCloseFor', () => {
  it("ends an app's disconnectPlayer with 4012, which the page has its own sentence for", () => {
    expect(SESSION_END.appDisconnectedViewer).toEqual({
      endReason: 'app disconnected the viewer',
      close: { code: 4012, reason: 'the app disconnected the viewer' },
    });
    expect(VIEWER_CLOSES.disconnectedByApp.code).toBe(4012);
    expect(Object.entries(SESSION_END).filter(([, e]) => e.close.code === 4012).map(([cause]) => cause)).toEqual(['appDisconnectedViewer']);
  });

  it("puts the app's reason after the table's", () => {
    expect(viewerCloseFor('appDisconnectedViewer', 'kicked by the host')).toEqual({ code: 4012, reason: 'the app disconnected the viewer: kicked by the host' });
  });

  it('keeps the table reason when the app gave none, or only white space', () => {
    for (const detail of [undefined, '', ' \n\t ']) {
      expect(viewerCloseFor('appDisconnectedViewer', detail)).toEqual({ code: 4012, reason: 'the app disconnected the viewer' });
    }
  });

  it('makes control characters and runs of white space one space', () => {
    expect(viewerCloseFor('appDisconnectedViewer', '  idle\r\n\ttoo\u0000\u0007long  ').reason).toBe('the app disconnected the viewer: idle too long');
  });

  it('cuts a long reason to the bytes a close frame carries, never inside a character', () => {
    const reason = viewerCloseFor('appDisconnectedViewer', 'é'.repeat(200)).reason;
    const prefix = 'the app disconnected the viewer: ';
    expect(reason.startsWith(prefix)).toBe(true);
    // 33 ASCII bytes, then as many two-byte characters as fit in 123.
    expect(reason).toBe(prefix + 'é'.repeat(Math.floor((MAX_CLOSE_REASON_BYTES - prefix.length) / 2)));
    expect(Buffer.byteLength(reason, 'utf8')).toBeLessThanOrEqual(MAX_CLOSE_REASON_BYTES);
  });

  it("answers a later resume with the table's close, without the app's words", () => {
    expect(closeForEndReason('app disconnected the viewer')).toEqual({ code: 4012, reason: 'the app disconnected the viewer' });
  });
});
