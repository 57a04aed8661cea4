import { describe, expect, it } from 'vitest';
import { CLOSE_CODE_SENTENCES, VIEWER_CLOSE_CODES, describeClose } from './close-codes';

describe('close codes', () => {
  it.each([
    [4000, 'projectDisabled', 'This stream is not available. The link may be wrong or the project is disabled.'],
    [4001, 'noServerAvailable', 'No streaming server is available right now. Please try again in a few minutes.'],
    [4002, 'appNotFound', 'This application has not been published yet.'],
    [4003, 'appLaunchFailed', 'The application failed to start. Please try again.'],
    [4004, 'maxRunTimeReached', 'Your session reached its maximum run time.'],
    [4005, 'streamerNotFound', 'The stream could not be found. Please try again.'],
    [4006, 'appClosed', 'The application closed unexpectedly.'],
    [4012, 'disconnectedByApp', 'The application ended your session.'],
    [1000, 'normalClosure', 'The session has ended.'],
    [1001, 'goingAway', 'The session has ended.'],
    [1006, 'connectionLost', 'The connection to the server was lost.'],
  ])('code %i is %s with its own sentence, whatever the server said', (code, name, sentence) => {
    expect(describeClose(code, 'raw server words')).toEqual({ code, reason: 'raw server words', reasonName: name, sentence });
    expect(CLOSE_CODE_SENTENCES[code]).toBe(sentence);
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

  it('gives every code in the table exactly one name', () => {
    const codes = Object.values(VIEWER_CLOSE_CODES).map((entry) => entry.code);
    expect(new Set(codes).size).toBe(codes.length);
    expect(Object.keys(CLOSE_CODE_SENTENCES).map(Number).sort()).toEqual([...codes].sort());
  });
});
