// What the server derives of a new session's viewer from its signalling socket: browser, os and
// device type from the User-Agent, country and city from the client address (the socket's peer,
// or X-Forwarded-For from a proxy in http.trustProxy: fastify's request.ip).
import type { ClientDimensions } from '../repositories/session-dimensions';
import type { GeoIp } from './geoip';
import { userAgentDimensions } from './user-agent';

export interface ViewerOrigin {
  address: string;
  userAgent: string | undefined;
}

/** Derives the dimensions; geoIp undefined (geoip.enabled false) gives no country or city. */
export function clientDimensions(origin: ViewerOrigin, geoIp: GeoIp | undefined): ClientDimensions {
  return { ...userAgentDimensions(origin.userAgent), ...(geoIp?.lookup(origin.address) ?? {}) };
}
