// Why a download of a build archive ended without the file, in neutral terms: one error type
// with a kind (and its facts) and the words of what went wrong on the wire. The control plane
// and the agent each turn it into their own vocabulary (a customer's objection, a command's code).
import { STATUS_CODES } from 'node:http';
import { byteWords } from './byte-size';

export type DownloadFailure =
  /** The hop policy refused the URL (hop 0) or a redirect target; `reason` is the policy's words. */
  | { kind: 'refused-url'; hop: number; url: string; reason: string }
  /** A redirect's Location is not a URL. */
  | { kind: 'bad-redirect' }
  | { kind: 'too-many-redirects'; maxRedirects: number }
  /** An answer that is neither the file nor worth a retry (4xx, 3xx without Location, …); or, once retries ran out, a 5xx/408/429. */
  | { kind: 'http-status'; status: number; /** The host that answered, when it is not the first URL's (a redirect's target). */ redirectedHost?: string }
  /** The first bytes are no ZIP local-file or empty-archive header. */
  | { kind: 'not-zip'; head: Buffer; contentType: string | undefined }
  /** More than `maxBytes`: said by the server (`totalBytes`) or found while streaming. */
  | { kind: 'too-large'; maxBytes: number; totalBytes: number | undefined }
  /** The server serves another size than expected (`servedBytes`), or sent more than expected (undefined). */
  | { kind: 'size-mismatch'; expectedBytes: number; servedBytes: number | undefined }
  /** The whole file twice had another SHA-256 than expected. */
  | { kind: 'hash-mismatch'; expected: string; actual: string }
  /** A socket, DNS or TLS error (`code` as Node gives it, '' when none). TLS certificate errors end at once. */
  | { kind: 'network'; code: string; message: string }
  | { kind: 'stalled'; stallTimeoutMs: number }
  /** The answer ended before the size it announced. */
  | { kind: 'cut-short'; bytes: number; totalBytes: number }
  /** A Range request was refused (416) or answered at another offset: the next attempt starts over. */
  | { kind: 'cannot-resume'; wrongPlace: boolean }
  /** Writing the file failed (`code`: ENOSPC, EDQUOT, EIO, …). */
  | { kind: 'disk'; code: string }
  /** The caller's signal aborted; the `.part` is kept for a resume. */
  | { kind: 'aborted' };

/**
 * A download of a build archive ended. `message` is the failure in words; `failedAttempts` says how
 * many attempts failed in a row when the retries ran out (0 when the failure ended it at once).
 */
export class ArchiveDownloadError extends Error {
  override readonly name = 'ArchiveDownloadError';
  constructor(
    readonly failure: DownloadFailure,
    /** Bytes of the `.part` file when it ended. */
    readonly bytes: number,
    readonly failedAttempts = 0,
    options?: { cause?: unknown },
  ) {
    super(failureWords(failure), options);
  }
}

/** True for the failures another attempt may heal: the network, a stall, 5xx/408/429, a refused resume. */
export function isRetryable(failure: DownloadFailure): boolean {
  switch (failure.kind) {
    case 'network':
      return !isCertificateCode(failure.code);
    case 'http-status':
      return failure.status >= 500 || failure.status === 408 || failure.status === 429;
    case 'stalled':
    case 'cut-short':
    case 'cannot-resume':
      return true;
    default:
      return false;
  }
}

/** A status line in words: `403 Forbidden`. */
export function statusWords(status: number): string {
  const text = STATUS_CODES[status];
  return text === undefined ? String(status) : `${status} ${text}`;
}

/** The `code` of a Node error (`ECONNRESET`), or '' when there is none. */
export function errorCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
}

/** The failure in neutral words ("the server answered 503 Service Unavailable", "the connection was reset"). */
export function failureWords(failure: DownloadFailure): string {
  switch (failure.kind) {
    case 'refused-url':
      return `${failure.hop === 0 ? 'the URL' : `the redirect to ${failure.url}`} is refused: ${failure.reason}`;
    case 'bad-redirect':
      return 'the URL redirected to an address that is not a valid URL';
    case 'too-many-redirects':
      return `the URL redirected more than ${failure.maxRedirects} times`;
    case 'http-status':
      return `the server answered ${statusWords(failure.status)}`;
    case 'not-zip':
      return 'the URL returned something that is not a .zip archive';
    case 'too-large':
      return `the file is larger than ${byteWords(failure.maxBytes)}`;
    case 'size-mismatch':
      return failure.servedBytes === undefined ? `the server sent more than ${failure.expectedBytes} bytes` : `the server serves ${failure.servedBytes} bytes, not ${failure.expectedBytes}`;
    case 'hash-mismatch':
      return `the file's SHA-256 is ${failure.actual}, expected ${failure.expected}`;
    case 'network':
      return networkWords(failure.code);
    case 'stalled':
      return `the server sent nothing for ${Math.round(failure.stallTimeoutMs / 1000)} s`;
    case 'cut-short':
      return `the connection closed before the whole file arrived (${byteWords(failure.bytes)} of ${byteWords(failure.totalBytes)})`;
    case 'cannot-resume':
      return failure.wrongPlace ? 'the server resumed the download at the wrong place' : 'the server could not resume the download';
    case 'disk':
      return `the file could not be written${failure.code === '' ? '' : ` (${failure.code})`}`;
    case 'aborted':
      return 'the download was aborted';
    default:
      return failure satisfies never;
  }
}

/** A socket, DNS or TLS error in words, by its code. */
function networkWords(code: string): string {
  switch (code) {
    case 'ECONNRESET':
    case 'EPIPE':
      return 'the connection was reset';
    case 'ECONNREFUSED':
      return 'the connection was refused';
    case 'ETIMEDOUT':
      return 'the connection timed out';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'the server could not be reached';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'the host name could not be resolved';
    case 'ERR_STREAM_PREMATURE_CLOSE':
      return 'the connection closed before the whole file arrived';
    default:
      if (isCertificateCode(code)) return `the server's TLS certificate was not accepted (${code})`;
      return code === '' ? 'the connection failed' : `the connection failed (${code})`;
  }
}

/** OpenSSL's verification codes (as Node reports them) that name no CERT. */
const VERIFY_CODES = new Set(['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'UNABLE_TO_DECODE_ISSUER_PUBLIC_KEY', 'INVALID_CA', 'PATH_LENGTH_EXCEEDED', 'INVALID_PURPOSE', 'HOSTNAME_MISMATCH']);

/** TLS certificate errors do not heal by retrying (an untrusted private CA's leaf is UNABLE_TO_VERIFY_LEAF_SIGNATURE). */
function isCertificateCode(code: string): boolean {
  return code.startsWith('ERR_TLS') || code.includes('CERT') || VERIFY_CODES.has(code);
}
