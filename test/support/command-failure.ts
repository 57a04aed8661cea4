// What an agent command handler refused with, for tests that compare the code and the message.
import { CommandFailure } from '@pixelfleet/agent';

/** The [code, message] of the CommandFailure the promise rejects with; anything else fails the test. */
export function failureOf(promise: Promise<unknown>): Promise<[string, string]> {
  return promise.then(
    () => {
      throw new Error('expected a CommandFailure, the promise resolved');
    },
    (err: unknown) => {
      if (!(err instanceof CommandFailure)) throw err;
      return [err.code, err.message];
    },
  );
}
