// The one error catalog. Domain code throws DomainError (kind + message); the HTTP edge writes
// catalog entries and domain errors as `{ message }` bodies, and the gRPC edge maps kinds to status codes.
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

/**
 * The HTTP status of each kind, as the gRPC edge gives each kind one status code (grpc/status.ts):
 * the standard gRPC → HTTP mapping (FAILED_PRECONDITION is 400, ALREADY_EXISTS 409). The HTTP
 * error handler writes a DomainError as this status and `{ message }`.
 */
export const DOMAIN_ERROR_HTTP_STATUS: Readonly<Record<DomainErrorKind, number>> = {
  invalid: 400,
  not_found: 404,
  conflict: 409,
  precondition: 400,
  unauthenticated: 401,
  forbidden: 403,
};

export const invalid = (message: string) => new DomainError('invalid', message);
export const notFound = (message: string) => new DomainError('not_found', message);
export const conflict = (message: string) => new DomainError('conflict', message);
export const precondition = (message: string) => new DomainError('precondition', message);

/**
 * HTTP error bodies, by name: status and exact message. `{name}` placeholders are filled by
 * ApiError's params (e.g. `missingField` with `{ field: 'fileUrl' }`). The spec's rows are
 * compared with its text by errors.test.ts.
 */
export const HTTP_ERRORS = {
  internal: { status: 500, message: 'Internal server error' },
  routeNotFound: { status: 404, message: 'Route not found' },
  malformedJson: { status: 400, message: 'Malformed JSON body' },
  bodyTooLarge: { status: 413, message: 'Request body is too large' },
  paramTooLong: { status: 414, message: 'A path parameter is too long' },
  badUrl: { status: 400, message: 'Malformed URL' },
  // Answered before routing (http/client-errors.ts): requests Node's parser refused, and the like.
  malformedRequest: { status: 400, message: 'Malformed HTTP request' },
  headersTooLarge: { status: 431, message: 'Request header fields are too large' },
  chunkExtensionsTooLarge: { status: 413, message: 'Request chunk extensions are too large' },
  requestTimeout: { status: 408, message: 'Request timed out' },
  hostRequired: { status: 400, message: 'Missing Host header' },
  expectationFailed: { status: 417, message: 'Expectation not supported' },
  shuttingDown: { status: 503, message: 'The server is shutting down' },
  // /metrics (http/metrics-auth.ts): not in the spec.
  metricsUnauthorized: { status: 401, message: 'Metrics need a valid bearer token' },
  // Build and project API: spec rows (Errors, per endpoint).
  userStatsParamsRequired: { status: 400, message: 'projectId, userId and apikey are required' },
  userIdRequired: { status: 400, message: 'User ID is required' },
  invalidUser: { status: 401, message: 'Invalid User' },
  invalidApiKey: { status: 401, message: 'Unauthorized: Invalid API Key' },
  accessDenied: { status: 403, message: 'Access denied' },
  forbidden: { status: 403, message: 'Forbidden' },
  projectNotFound: { status: 404, message: 'Project not found' },
  unsupportedMediaType: { status: 415, message: 'Content-Type must be application/json' },
  missingField: { status: 400, message: 'Missing required field: {field}' },
  buildCallRateLimited: { status: 429, message: 'Rate limit exceeded. Try again in {wait}.' },
  // Build and project API: where the spec names the status but not the message.
  invalidField: { status: 400, message: '{detail}' },
  readOnlyAccess: { status: 403, message: 'Forbidden: read-only access' },
  subscriptionInactive: { status: 403, message: 'Forbidden: subscription is not active' },
  uploadNotFound: { status: 404, message: 'Upload not found' },
  sessionNotFound: { status: 404, message: 'Session not found' },
  webhookNotConfigured: { status: 404, message: 'Webhook URL not configured' },
  fairUseRateLimited: { status: 429, message: 'Too many requests. Try again in {seconds} seconds.' },
  // Archive downloads by agents (builds/archive-links.ts): not in the spec.
  archiveLinkMissing: { status: 403, message: 'Archive link token is missing' },
  archiveLinkInvalid: { status: 403, message: 'Archive link is not valid' },
  archiveLinkExpired: { status: 403, message: 'Archive link expired' },
  archiveLinkOtherBuild: { status: 403, message: 'Archive link is for another build' },
  archiveWorkerCredentialMissing: { status: 401, message: 'Worker credential is missing' },
  archiveWorkerCredentialInvalid: { status: 401, message: 'Worker credential is not valid' },
  archiveLinkOtherWorker: { status: 403, message: 'Archive link is for another worker' },
  buildHasNoArchive: { status: 404, message: 'Build has no archive' },
  rangeNotSatisfiable: { status: 416, message: 'Range not satisfiable' },
  // The dashboard's sign-in routes (http/dashboard/): not in the spec.
  dashboardSignInRefused: { status: 401, message: 'Wrong e-mail address or password' },
  dashboardSignInThrottled: { status: 429, message: 'Too many failed sign-ins. Try again in {seconds} seconds.' },
  dashboardPasswordResetThrottled: { status: 429, message: 'Too many password reset requests from your network. Try again in {seconds} seconds.' },
  dashboardNotSignedIn: { status: 401, message: 'Not signed in' },
  dashboardOperatorRefused: { status: 403, message: 'Wrong admin token' },
  dashboardOperatorThrottled: { status: 429, message: 'Too many wrong admin tokens. Try again in {seconds} seconds.' },
  dashboardOperatorOnly: { status: 403, message: 'Operators only: confirm the admin token on the Account page' },
  dashboardCrossSite: { status: 403, message: 'Cross-site request refused' },
  dashboardCsrfInvalid: { status: 403, message: 'Missing or invalid CSRF token' },
  // Analytics API: spec rows (Errors, analytics endpoints) and where the spec names the status but
  // not the message. These routes also write `code`, and `field` (plus e.g. `maxDays`) where given.
  analyticsInvalidDimension: { status: 400, message: 'Invalid dimension. Must be one of: country, city, browser, device, os', code: 'VALIDATION_FAILED' },
  analyticsDatesRequired: { status: 400, message: 'startDate and endDate are required (ISO format)', code: 'VALIDATION_FAILED' },
  analyticsInvalidDate: { status: 400, message: '{field} must be an ISO 8601 date and time', code: 'VALIDATION_FAILED' },
  analyticsDatesReversed: { status: 400, message: 'startDate must not be after endDate', code: 'VALIDATION_FAILED' },
  analyticsWindowTooWide: { status: 400, message: 'The window from startDate to endDate may be at most {maxDays} days', code: 'VALIDATION_FAILED' },
  analyticsInvalidParameter: { status: 400, message: '{field} {rule}', code: 'VALIDATION_FAILED' },
  analyticsProjectIdRequired: { status: 403, message: 'Forbidden: projectId is required', code: 'FORBIDDEN' },
  analyticsSessionOfAnotherProject: { status: 403, message: 'Forbidden: session does not belong to this project', code: 'FORBIDDEN' },
  analyticsLogFileNotFound: { status: 404, message: 'Log file not found', code: 'NOT_FOUND' },
  analyticsRateLimited: { status: 429, message: 'Rate limit exceeded. Try again in {seconds} seconds.', code: 'RATE_LIMITED' },
} as const satisfies Record<string, { status: number; message: string; code?: string }>;

/**
 * The `code` analytics routes write beside `message` for catalog entries shared with the build &
 * project API (whose older routes write `message` only). Entries of the analytics API carry theirs.
 */
export const ANALYTICS_SHARED_CODES: Partial<Record<keyof typeof HTTP_ERRORS, string>> = {
  internal: 'INTERNAL_ERROR',
  routeNotFound: 'NOT_FOUND',
  invalidApiKey: 'UNAUTHORIZED',
  accessDenied: 'FORBIDDEN',
  projectNotFound: 'NOT_FOUND',
  sessionNotFound: 'NOT_FOUND',
  invalidField: 'VALIDATION_FAILED',
  missingField: 'VALIDATION_FAILED',
  shuttingDown: 'SHUTTING_DOWN',
  malformedRequest: 'VALIDATION_FAILED',
  badUrl: 'VALIDATION_FAILED',
  paramTooLong: 'VALIDATION_FAILED',
};

export type HttpErrorName = keyof typeof HTTP_ERRORS;

/** The stable `code` an analytics route writes for a catalog entry (undefined: none). */
export function analyticsCodeOf(entry: HttpErrorName): string | undefined {
  const e = HTTP_ERRORS[entry];
  return ('code' in e ? e.code : undefined) ?? ANALYTICS_SHARED_CODES[entry];
}

/** An HTTP error from the catalog; the error handler writes it as `{ message }` (plus headers). */
export class ApiError extends Error {
  override readonly name = 'ApiError';
  readonly status: number;
  constructor(
    readonly entry: HttpErrorName,
    params: Readonly<Record<string, string | number>> = {},
    /** Response headers to set, e.g. `Retry-After`. */
    readonly headers: Readonly<Record<string, string>> = {},
    /** Fields analytics routes add to the body beside `message` and `code` (`field`, `maxDays`). */
    readonly fields: Readonly<Record<string, string | number>> = {},
  ) {
    super(HTTP_ERRORS[entry].message.replace(/\{(\w+)\}/g, (whole, key: string) => (params[key] === undefined ? whole : String(params[key]))));
    this.status = HTTP_ERRORS[entry].status;
  }
}

/**
 * Why a webhook delivery failed, as test-webhook tells its caller. Generic on purpose: socket and
 * TLS errors name addresses and ports (`connect ECONNREFUSED 10.0.0.7:5432`), which would let a
 * caller map the internal network. The detail goes only to the server log and the
 * webhook_deliveries row, which only operators read.
 */
export const WEBHOOK_DELIVERY_FAILURES = {
  refused: 'the webhook URL was refused by the outbound URL policy',
  unreachable: 'the webhook endpoint could not be reached',
  timedOut: 'the webhook endpoint timed out',
  rejected: 'the webhook endpoint answered {status}',
} as const satisfies Record<string, string>;

export type WebhookDeliveryFailure = keyof typeof WEBHOOK_DELIVERY_FAILURES;

/** The caller's sentence for a failed delivery; `statusCode` fills `rejected`'s `{status}`. */
export function webhookDeliveryFailureMessage(failure: WebhookDeliveryFailure, statusCode: number | undefined): string {
  return WEBHOOK_DELIVERY_FAILURES[failure].replace('{status}', String(statusCode ?? 0));
}
