import { describe, expect, it } from 'vitest';
import { ExtensionMessageError, parseExtensionMessage } from './extension-messages';

describe('parseExtensionMessage', () => {
  it('reads a session message', () => {
    expect(
      parseExtensionMessage({ type: 'pixelfleetSession', sessionId: 'session_1_2', viewerToken: 'tok', telemetryUrl: '/api/t', resumeWindowSeconds: 30, playerId: 'x' }),
    ).toEqual({ type: 'pixelfleetSession', sessionId: 'session_1_2', viewerToken: 'tok', telemetryUrl: '/api/t', resumeWindowSeconds: 30 });
  });

  it('reads queue positions and never reports a queue shorter than the position', () => {
    expect(parseExtensionMessage({ type: 'pixelfleetQueue', position: 3, queueLength: 7 })).toEqual({ type: 'pixelfleetQueue', position: 3, queueLength: 7, waitingForServer: false });
    expect(parseExtensionMessage({ type: 'pixelfleetQueue', position: 3, queueLength: 0, waitingForServer: false })).toEqual({
      type: 'pixelfleetQueue',
      position: 3,
      queueLength: 3,
      waitingForServer: false,
    });
  });

  it('reads a line that waits for a streaming server to come back', () => {
    expect(parseExtensionMessage({ type: 'pixelfleetQueue', position: 1, queueLength: 2, waitingForServer: true })).toEqual({
      type: 'pixelfleetQueue',
      position: 1,
      queueLength: 2,
      waitingForServer: true,
    });
  });

  it('reads the estimated wait when the server sends one', () => {
    expect(parseExtensionMessage({ type: 'pixelfleetQueue', position: 2, queueLength: 2, waitingForServer: false, estimatedWaitSeconds: 95 })).toEqual({
      type: 'pixelfleetQueue',
      position: 2,
      queueLength: 2,
      waitingForServer: false,
      estimatedWaitSeconds: 95,
    });
  });

  it('reads the starting status', () => {
    expect(parseExtensionMessage({ type: 'pixelfleetStatus', status: 'starting' })).toEqual({ type: 'pixelfleetStatus', status: 'starting' });
  });

  it.each([
    ['not an object', 'pixelfleetQueue'],
    ['an array', []],
    ['an unknown type', { type: 'pixelfleetNope' }],
    ['an empty session id', { type: 'pixelfleetSession', sessionId: '', viewerToken: 't', telemetryUrl: '/t' }],
    ['a missing token', { type: 'pixelfleetSession', sessionId: 's', telemetryUrl: '/t', resumeWindowSeconds: 0 }],
    ['a missing resume window', { type: 'pixelfleetSession', sessionId: 's', viewerToken: 't', telemetryUrl: '/t' }],
    ['a negative resume window', { type: 'pixelfleetSession', sessionId: 's', viewerToken: 't', telemetryUrl: '/t', resumeWindowSeconds: -1 }],
    ['a fractional resume window', { type: 'pixelfleetSession', sessionId: 's', viewerToken: 't', telemetryUrl: '/t', resumeWindowSeconds: 1.5 }],
    ['position 0', { type: 'pixelfleetQueue', position: 0, queueLength: 1 }],
    ['a fractional position', { type: 'pixelfleetQueue', position: 1.5, queueLength: 2 }],
    ['a string position', { type: 'pixelfleetQueue', position: '2', queueLength: 2 }],
    ['a waitingForServer that is not a boolean', { type: 'pixelfleetQueue', position: 1, queueLength: 1, waitingForServer: 'yes' }],
    ['a negative estimated wait', { type: 'pixelfleetQueue', position: 1, queueLength: 1, estimatedWaitSeconds: -5 }],
    ['an estimated wait that is not a whole number', { type: 'pixelfleetQueue', position: 1, queueLength: 1, estimatedWaitSeconds: 'soon' }],
    ['an unknown status', { type: 'pixelfleetStatus', status: 'running' }],
    ['an inherited field', Object.assign(Object.create({ status: 'starting' }) as object, { type: 'pixelfleetStatus' })],
  ])('rejects %s', (_what, value) => {
    expect(() => parseExtensionMessage(value)).toThrow(ExtensionMessageError);
  });
});
