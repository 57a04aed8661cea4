// Maps domain errors to gRPC statuses at the edge; anything unexpected is logged and
// answered as INTERNAL without details.
import { Metadata, status, type ServiceError } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { DomainError, type DomainErrorKind } from '../errors';
import { bearerCredential } from '../lib/secrets';

const CODE_BY_KIND: Record<DomainErrorKind, status> = {
  invalid: status.INVALID_ARGUMENT,
  not_found: status.NOT_FOUND,
  conflict: status.ALREADY_EXISTS,
  precondition: status.FAILED_PRECONDITION,
  unauthenticated: status.UNAUTHENTICATED,
  forbidden: status.PERMISSION_DENIED,
};

export function grpcError(code: status, details: string): ServiceError {
  return Object.assign(new Error(details), { code, details, metadata: new Metadata() });
}

export function toGrpcError(err: unknown, log: Logger, method: string): ServiceError {
  if (err instanceof DomainError) return grpcError(CODE_BY_KIND[err.kind], err.message);
  log.error({ err, method }, 'unexpected error in gRPC handler');
  return grpcError(status.INTERNAL, 'internal error');
}

/** The bearer token of a call, or undefined when absent or malformed. */
export function bearerToken(metadata: Metadata): string | undefined {
  const values = metadata.get('authorization');
  if (values.length !== 1) return undefined;
  const value = values[0];
  return typeof value === 'string' ? bearerCredential(value) : undefined;
}

/**
 * Ends a server-streaming or bidi call with an error status. grpc-js sends the status from the
 * stream's 'error' handler; destroy() would skip it and leave the call open until shutdown.
 */
export function endCallWithError(call: { emit(event: 'error', err: ServiceError): boolean }, err: ServiceError): void {
  call.emit('error', err);
}
