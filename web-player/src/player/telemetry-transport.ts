// The browser's ways out for telemetry: fetch with keepalive (token in a header) and sendBeacon
// (no headers: the body carries the token; across origins it goes as text/plain to avoid a preflight).

import type { TelemetryTransport } from '../telemetry/reporter';
import { VIEWER_TOKEN_HEADER } from '../telemetry/rows';

export function browserTelemetryTransport(pageOrigin: string): TelemetryTransport {
  return {
    async post(url, body, viewerToken) {
      try {
        const response = await fetch(url, {
          method: 'POST',
          keepalive: true,
          credentials: 'omit',
          headers: { 'content-type': 'application/json', [VIEWER_TOKEN_HEADER]: viewerToken },
          body,
        });
        return response.status;
      } catch {
        return 0;
      }
    },
    beacon(url, body) {
      if (typeof navigator.sendBeacon !== 'function') return false;
      const sameOrigin = new URL(url).origin === pageOrigin;
      try {
        return navigator.sendBeacon(url, sameOrigin ? new Blob([body], { type: 'application/json' }) : body);
      } catch {
        return false;
      }
    },
  };
}
