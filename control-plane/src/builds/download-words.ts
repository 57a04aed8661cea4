// The sentences a customer reads in a build's objection when its download ends: what the server
// answered, what went wrong on the wire, what the URL returned instead of a .zip. Never a stack,
// never an internal address.
import { STATUS_CODES } from 'node:http';

/** Why a download ended without a file. `Reject` outcomes are the archive's fault, the others the fetch's. */
export type DownloadFailureReason = 'not-zip' | 'too-large' | 'http-status' | 'network' | 'refused-url' | 'too-many-redirects' | 'no-space';

/** A status line in words: `403 Forbidden`. */
export function statusWords(status: number): string {
  const text = STATUS_CODES[status];
  return text === undefined ? String(status) : `${status} ${text}`;
}

/** What a 4xx answer means to the customer who gave us the link. */
export function clientErrorWords(status: number): string {
  const answered = `the server answered ${statusWords(status)}`;
  switch (status) {
    case 401:
    case 403:
    case 410:
      return `${answered}: the link may have expired`;
    case 404:
      return `${answered}: check the link`;
    default:
      return answered;
  }
}

/** The `code` of a Node error (`ECONNRESET`), or '' when there is none. */
export function errorCode(err: unknown): string {
  return typeof err === 'object' && err !== null && 'code' in err ? String(err.code) : '';
}

/** A socket, DNS or TLS error in words (by its code; the message only when the code is unknown). */
export function networkErrorWords(err: unknown): string {
  const code = errorCode(err);
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
      if (code.startsWith('ERR_TLS') || code.includes('CERT')) return `the server's TLS certificate was not accepted (${code})`;
      return code === '' ? 'the connection failed' : `the connection failed (${code})`;
  }
}

/** True for TLS certificate errors: they do not heal by retrying. */
export function isCertificateError(err: unknown): boolean {
  const code = errorCode(err);
  return code.startsWith('ERR_TLS') || code.includes('CERT');
}

const HTML_START = /^(?:\uFEFF)?\s*<(?:!doctype\s+html|html|head|body|!--)/i;
const XML_START = /^(?:\uFEFF)?\s*<\?xml/i;

/**
 * Says what a body that is not a .zip archive is: an HTML page names itself, other content by its
 * content type and first bytes (printable text quoted, anything else in hex).
 */
export function notZipWords(firstBytes: Buffer, contentType: string | undefined): string {
  if (firstBytes.length === 0) return 'the URL returned an empty file, not a .zip archive';
  const type = contentType?.split(';')[0]?.trim().toLowerCase();
  const text = firstBytes.subarray(0, 64).toString('latin1');
  if (type === 'text/html' || type === 'application/xhtml+xml' || HTML_START.test(text)) return 'the URL returned an HTML page, not a .zip archive';
  const head = firstBytes.subarray(0, 16);
  const printable = [...head].every((b) => b === 9 || b === 10 || b === 13 || (b >= 32 && b < 127));
  const shown = printable ? `"${head.toString('latin1').replace(/\s+/g, ' ')}${firstBytes.length > head.length ? '…' : ''}"` : head.toString('hex').replace(/(..)(?=.)/g, '$1 ');
  const what = XML_START.test(text) ? 'an XML document' : type === undefined || type === '' ? 'a file' : `${type} content`;
  return `the URL returned ${what}, not a .zip archive (it starts with ${shown})`;
}

/** Bytes in the unit a person reads: `24 GiB`, `1.5 MiB`, `312 bytes`. */
export function byteWords(bytes: number): string {
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  if (bytes < 1024) return `${bytes} bytes`;
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${Number(value.toFixed(1))} ${units[unit]}`;
}
