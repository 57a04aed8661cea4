// The one error this package throws: a caller used an endpoint wrongly (bad argument or wrong
// state). Peers' mistakes never throw; they close the socket with a reason instead.

export type SignallingUsageErrorKind = 'invalid_argument' | 'wrong_state';

export class SignallingUsageError extends Error {
  override readonly name = 'SignallingUsageError';

  constructor(
    readonly kind: SignallingUsageErrorKind,
    message: string,
  ) {
    super(message);
  }
}
