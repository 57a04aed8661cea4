// The sentences a customer reads in a build's objection when its download ends that the shared
// download's neutral words do not say: what a 4xx means for their link, what the URL returned
// instead of a .zip. Never a stack, never an internal address.
import { statusWords } from '@pixelfleet/build-archive';

/** Why a download ended without a file. `Reject` outcomes are the archive's fault, the others the fetch's. */
export type DownloadFailureReason = 'not-zip' | 'too-large' | 'http-status' | 'network' | 'refused-url' | 'too-many-redirects' | 'no-space';

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
