// Client details for telemetry (browser, OS, device type) read from the user-agent string.
// Pure: the page passes navigator's values in.

import type { ClientDetails } from '../telemetry/rows';

/** What the page knows about where it runs. */
export interface ClientEnvironment {
  readonly userAgent: string;
  /** `navigator.maxTouchPoints` (iPadOS reports a Mac user agent; touch tells them apart). */
  readonly maxTouchPoints: number;
  readonly embedded: boolean;
  readonly domainUrl: string;
}

const BROWSERS: readonly (readonly [name: string, pattern: RegExp])[] = [
  ['Edge', /\bEdg(?:e|A|iOS)?\/(\d+)/],
  ['Opera', /\bOPR\/(\d+)/],
  ['Samsung Internet', /\bSamsungBrowser\/(\d+)/],
  ['Firefox', /\b(?:Firefox|FxiOS)\/(\d+)/],
  ['Chrome', /\b(?:CriOS|HeadlessChrome|Chrome)\/(\d+)/],
  ['Safari', /\bVersion\/(\d+)(?:[.\d]*) (?:Mobile\/\S+ )?Safari\//],
];

/** `Chrome 147`, `Firefox 128`, … or `Unknown`. */
export function browserName(userAgent: string): string {
  for (const [name, pattern] of BROWSERS) {
    const match = pattern.exec(userAgent);
    if (match !== null) return `${name} ${match[1] ?? ''}`.trim();
  }
  return 'Unknown';
}

function isIpad(userAgent: string, maxTouchPoints: number): boolean {
  return /\biPad\b/.test(userAgent) || (/\bMacintosh\b/.test(userAgent) && maxTouchPoints > 1);
}

/** `Windows`, `macOS`, `iOS`, `iPadOS`, `Android`, `ChromeOS`, `Linux` or `Unknown`. */
export function osName(userAgent: string, maxTouchPoints: number): string {
  if (/\bWindows\b/.test(userAgent)) return 'Windows';
  if (/\b(?:iPhone|iPod)\b/.test(userAgent)) return 'iOS';
  if (isIpad(userAgent, maxTouchPoints)) return 'iPadOS';
  if (/\bMacintosh\b/.test(userAgent)) return 'macOS';
  if (/\bAndroid\b/.test(userAgent)) return 'Android';
  if (/\bCrOS\b/.test(userAgent)) return 'ChromeOS';
  if (/\bLinux\b/.test(userAgent)) return 'Linux';
  return 'Unknown';
}

export function deviceType(userAgent: string, maxTouchPoints: number): ClientDetails['deviceType'] {
  if (isIpad(userAgent, maxTouchPoints)) return 'tablet';
  if (/\bAndroid\b/.test(userAgent)) return /\bMobile\b/.test(userAgent) ? 'mobile' : 'tablet';
  if (/\b(?:iPhone|iPod|Mobi)\b/.test(userAgent)) return 'mobile';
  return 'desktop';
}

export function clientDetails(env: ClientEnvironment): ClientDetails {
  return {
    browser: browserName(env.userAgent),
    os: osName(env.userAgent, env.maxTouchPoints),
    deviceType: deviceType(env.userAgent, env.maxTouchPoints),
    embedded: env.embedded,
    domainUrl: env.domainUrl,
  };
}
