// The dashboard's HTML shell, the same for every page of the app (it routes in the browser), and
// the Content-Security-Policy it is served with: no inline script or style, nothing from another
// origin, no framing. Every string a customer wrote reaches the page as JSON and is rendered as text.
import { escapeHtml } from '@pixelfleet/common';

export interface DashboardPageOptions {
  /** The dashboard's public path (publicUrls.dashboard's, e.g. `/dashboard`): the app's routes and API live under it. */
  readonly basePath: string;
  /** URL prefix of the assets, e.g. `/dashboard/assets`. */
  readonly assetBase: string;
  /** The bundle's version (bundleDashboard): part of the asset names. */
  readonly version: string;
}

/** The asset names of a bundle version: `dashboard.<version>.js` and `.css`. */
export function dashboardAssetNames(version: string): { js: string; css: string } {
  return { js: `dashboard.${version}.js`, css: `dashboard.${version}.css` };
}

export function renderDashboardPage(options: DashboardPageOptions): string {
  const base = escapeHtml(options.assetBase.replace(/\/+$/, ''));
  const names = dashboardAssetNames(options.version);
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<meta name="color-scheme" content="light dark">
<title>Pixelfleet dashboard</title>
<link rel="stylesheet" href="${base}/${names.css}">
<script src="${base}/${names.js}" defer></script>
</head>
<body>
<div id="pixelfleet-dashboard" data-base-path="${escapeHtml(options.basePath.replace(/\/+$/, ''))}"></div>
<noscript>The dashboard needs JavaScript.</noscript>
</body>
</html>
`;
}

/**
 * Content-Security-Policy of every dashboard page. `style-src-attr 'unsafe-inline'` is absent:
 * the app styles through classes and the CSSOM (element.style), which a policy does not govern.
 */
export function dashboardContentSecurityPolicy(): string {
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}
