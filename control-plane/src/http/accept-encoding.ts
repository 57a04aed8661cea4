// Whether a request's Accept-Encoding takes gzip: one reading for every answer the control plane
// may send gzipped (the dashboard's answers, the share page's bundle, stored engine log files).

/**
 * Whether an Accept-Encoding header takes gzip (RFC 9110 §12.5.3): `gzip` (or its alias `x-gzip`)
 * with a q above 0, or `*` above 0 when gzip is not named.
 */
export function acceptsGzip(header: string | undefined): boolean {
  if (header === undefined) return false;
  let star: boolean | undefined;
  for (const part of header.toLowerCase().split(',')) {
    const [name = '', ...params] = part.trim().split(';').map((s) => s.trim());
    const q = params.find((p) => p.startsWith('q='));
    const weight = q === undefined ? 1 : Number(q.slice(2));
    const wanted = Number.isFinite(weight) && weight > 0;
    if (name === 'gzip' || name === 'x-gzip') return wanted;
    if (name === '*') star = wanted;
  }
  return star === true;
}
