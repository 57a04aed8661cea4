// Addresses the page derives from its own location: the signalling socket (same origin, the page's
// path + `/signalling`) and the telemetry endpoint the server names (absolute, or a path).

/** The parts of `window.location` these functions read. */
export interface PageLocation {
  readonly protocol: string;
  readonly host: string;
  readonly pathname: string;
  readonly href: string;
}

/** `ws(s)://<host><page path>/signalling`, e.g. `wss://host/share/<projectId>/signalling`. */
export function signallingUrl(location: PageLocation): string {
  const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
  const path = location.pathname.replace(/\/+$/, '');
  return `${scheme}//${location.host}${path}/signalling`;
}

/** Resolve the server's telemetry URL against the page; only http(s) is accepted. */
export function telemetryEndpoint(telemetryUrl: string, location: PageLocation): string {
  const url = new URL(telemetryUrl, location.href);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    throw new TypeError(`telemetryUrl must be http(s), got ${url.protocol}`);
  }
  return url.href;
}

/** Bounds of the query parameters a page hands its app: a link anyone may craft must not make a big message. */
export const QUERY_PARAMETERS_LIMITS = { count: 32, nameChars: 64, valueChars: 512 } as const;

/**
 * The UIInteraction the page sends its app once the video plays (docs/streaming.md, "Query
 * parameters reach the app"): `{ pixelfleetQueryParameters: { name: value } }` from the page's own
 * query string, so that a warm instance, launched before its viewer came, learns what the link
 * asked for, and a cold one the same way. The first value of a repeated name counts; names past
 * QUERY_PARAMETERS_LIMITS.count, and names or values longer than its limits, are left out.
 * Undefined when the page has none.
 */
export function queryParametersMessage(search: string): { pixelfleetQueryParameters: Record<string, string> } | undefined {
  // A Map, then fromEntries: a name such as `__proto__` stays a plain key.
  const parameters = new Map<string, string>();
  for (const [name, value] of new URLSearchParams(search)) {
    if (parameters.size >= QUERY_PARAMETERS_LIMITS.count) break;
    if (name === '' || name.length > QUERY_PARAMETERS_LIMITS.nameChars || value.length > QUERY_PARAMETERS_LIMITS.valueChars || parameters.has(name)) continue;
    parameters.set(name, value);
  }
  return parameters.size === 0 ? undefined : { pixelfleetQueryParameters: Object.fromEntries(parameters) };
}
