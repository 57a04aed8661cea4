// The close a viewer hears when a session ends: the table's code and reason, and the app's own
// words after it when the app disconnected the viewer, always within a close frame's 123 bytes.
import { describe, expect, it } from 'vitest';
import { MAX_CLOSE_REASON_BYTES } from '@pixelfleet/signaling';
import { VIEWER_CLOSE_CODES } from '@pixelfleet/web-player';
import { SESSION_END, closeForEndReason, viewerCloseFor } from './session-end';

describe('viewerCloseFor', () => {
  it("ends an app's disconnectPlayer with 4012, which the page has its own sentence for", () => {
    expect(SESSION_END.appDisconnectedViewer).toEqual({
      endReason: 'app disconnected the viewer',
      close: { code: 4012, reason: 'the app disconnected the viewer' },
    });
    expect(VIEWER_CLOSE_CODES.disconnectedByApp.code).toBe(4012);
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
