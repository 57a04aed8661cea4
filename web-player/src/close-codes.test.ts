import { describe, expect, it } from 'vitest';
import { VIEWER_CLOSES, VIEWER_CLOSE_SENTENCES } from '@pixelfleet/signaling/viewer-closes';
import { describeClose } from './close-codes';
import { RESUMING_CLOSE_CODE } from './player/signalling-resume';

describe('close codes', () => {
  it.each([
    [4000, 'projectDisabled', 'This stream is not available. The link may be wrong or the project is disabled.'],
    [4001, 'noServerAvailable', 'No streaming server is available right now. Please try again in a few minutes.'],
    [4002, 'appNotFound', 'This application has not been published yet.'],
    [4003, 'appLaunchFailed', 'The application failed to start. Please try again.'],
    [4004, 'maxRunTimeReached', 'Your session reached its maximum run time.'],
    [4006, 'appClosed', 'The application closed unexpectedly.'],
    [4007, 'idleTimeout', 'Your session ended after a period without input.'],
    [4008, 'resumeRefused', 'The connection to the server was lost.'],
    [4010, 'tooManyConnections', 'Too many streams are open from your network. Close one and try again.'],
    [4011, 'queueFull', 'Too many viewers are waiting for this stream. Please try again later.'],
    [4012, 'disconnectedByApp', 'The application ended your session.'],
    [4013, 'connectTimeout', 'The video connection could not be established or was lost. Please check your network and try again.'],
    [4014, 'tooManySessions', 'Too many streams were started from your network. Please wait a minute and try again.'],
    [1000, 'normalClosure', 'The session has ended.'],
    [1001, 'goingAway', 'The session has ended.'],
    [1005, 'noStatus', 'The connection to the server was lost.'],
    [1006, 'connectionLost', 'The connection to the server was lost.'],
    [1008, 'policyViolation', 'The connection was closed after a signalling error. Please reload the page.'],
    [1012, 'serviceRestarting', 'The service is restarting. Please try again in a minute.'],
  ])('code %i is %s with its own sentence, whatever the server said', (code, name, sentence) => {
    expect(describeClose(code, 'raw server words')).toEqual({ code, reason: 'raw server words', reasonName: name, sentence });
    expect(VIEWER_CLOSE_SENTENCES[code]).toBe(sentence);
  });

  it('shows the server reason for an unknown code', () => {
    expect(describeClose(4999, '  Maintenance window  ')).toEqual({
      code: 4999,
      reason: '  Maintenance window  ',
      reasonName: 'unknown',
      sentence: 'Maintenance window',
    });
  });

  it('falls back to the code when an unknown close has no reason', () => {
    expect(describeClose(1011, '').sentence).toBe('The connection was closed (code 1011).');
  });

  it('describes every code of the table, and nothing sends 4005 any more', () => {
    for (const entry of Object.values(VIEWER_CLOSES)) expect(describeClose(entry.code, '').sentence).toBe(entry.sentence);
    expect(describeClose(4005, 'streamer not found').reasonName).toBe('unknown');
  });

  it('closes a silent socket with the table’s resuming code', () => {
    expect(RESUMING_CLOSE_CODE).toBe(VIEWER_CLOSES.resuming.code);
    expect(RESUMING_CLOSE_CODE).toBe(4009);
  });
});
