// Browser, operating system and device type of a viewer, derived on the server from the
// User-Agent of the share page's signalling socket with ua-parser-js 1.x (MIT; 2.x is AGPL-3.0,
// so the dependency stays on ^1).
import { UAParser } from 'ua-parser-js';
import type { ClientDimensions } from '../repositories/session-dimensions';

/** Longer User-Agents are cut before parsing (real ones are a few hundred characters). */
export const MAX_USER_AGENT_CHARS = 512;

/**
 * The browser and os names without versions (`Chrome`, `Mobile Safari`; `Windows`, `iOS`) and the
 * device type: ua-parser's (`mobile`, `tablet`, `smarttv`, `console`, `wearable`, `embedded`, `xr`),
 * or `desktop` when it names none for a recognised browser or os. A bot, a tool (curl) or garbage
 * gives nothing: those sessions have no value for these dimensions.
 */
export function userAgentDimensions(userAgent: string | undefined): Pick<ClientDimensions, 'browser' | 'os' | 'deviceType'> {
  if (userAgent === undefined || userAgent.trim() === '') return {};
  const result = new UAParser(userAgent.slice(0, MAX_USER_AGENT_CHARS)).getResult();
  const browser = result.browser.name;
  const os = result.os.name;
  if (browser === undefined && os === undefined) return {};
  return {
    ...(browser === undefined ? {} : { browser }),
    ...(os === undefined ? {} : { os }),
    deviceType: result.device.type ?? 'desktop',
  };
}
