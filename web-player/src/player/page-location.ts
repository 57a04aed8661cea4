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
