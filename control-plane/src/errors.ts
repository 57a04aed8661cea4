// The one error catalog. Domain code throws DomainError (kind + message); the HTTP edge writes
// catalog entries as `{ message }` bodies and the gRPC edge maps kinds to status codes.
// Spec rows for the REST API are added here, each with a test against the spec's text.

/** Why a domain operation refused; each kind maps to one gRPC status and one HTTP status. */
export type DomainErrorKind = 'invalid' | 'not_found' | 'conflict' | 'precondition' | 'unauthenticated' | 'forbidden';

export class DomainError extends Error {
  override readonly name = 'DomainError';
  constructor(
    readonly kind: DomainErrorKind,
    message: string,
  ) {
    super(message);
  }
}

export const invalid = (message: string) => new DomainError('invalid', message);
export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string) => new DomainError('conflict', message);
export const precondition = (message: string) => new DomainError('precondition', message);

/** HTTP error bodies, by name: status and exact message. */
export const HTTP_ERRORS = {
  internal: { status: 500, message: 'Internal server error' },
  routeNotFound: { status: 404, message: 'Route not found' },
  malformedJson: { status: 400, message: 'Malformed JSON body' },
  bodyTooLarge: { status: 413, message: 'Request body is too large' },
} as const satisfies Record<string, { status: number; message: string }>;

export type HttpErrorName = keyof typeof HTTP_ERRORS;

/** An HTTP error from the catalog; the error handler writes it as `{ message }`. */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  constructor(readonly entry: HttpErrorName) {
    super(HTTP_ERRORS[entry].message);
    this.status = HTTP_ERRORS[entry].status;
  }
}
