// The viewer page's HTML shell and the Content-Security-Policy it is meant to be served with.
// No inline script or style: everything comes from player.js and player.css.
import { escapeHtml } from '@pixelfleet/common';

export interface PlayerPageOptions {
  readonly projectId: string;
  /** `<title>`; default `Pixelfleet`. */
  readonly title?: string;
  /** URL prefix of player.js and player.css, e.g. `/share/assets` (a trailing slash is ignored). */
  readonly assetBase: string;
  /** The project's embedOrigins: the only sites the page posts its events to and takes messages from; none = any site. */
  readonly embedOrigins?: readonly string[];
}

export function renderPlayerPage(options: PlayerPageOptions): string {
  const base = escapeHtml(options.assetBase.replace(/\/+$/, ''));
  const title = escapeHtml(options.title ?? 'Pixelfleet');
  const embedOrigins = options.embedOrigins?.length ? ` data-embed-origins="${escapeHtml(options.embedOrigins.join(' '))}"` : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1, viewport-fit=cover">
<meta name="referrer" content="strict-origin-when-cross-origin">
<title>${title}</title>
<link rel="stylesheet" href="${base}/player.css">
<script src="${base}/player.js" defer></script>
</head>
<body>
<main id="pixelfleet-player" data-project-id="${escapeHtml(options.projectId)}"${embedOrigins}></main>
<noscript>This stream needs JavaScript.</noscript>
</body>
</html>
`;
}

export interface PlayerCspOptions {
  /** Extra `connect-src` sources (e.g. a telemetry origin other than the page's). */
  readonly connectSrc?: readonly string[];
  /** Extra script/style sources when assets come from another origin. */
  readonly assetSrc?: readonly string[];
  /** Who may frame the page; default `*` (the embedding API). */
  readonly frameAncestors?: readonly string[];
}

/**
 * Content-Security-Policy for the page. Inline style *attributes* are allowed because the frontend
 * library sets one with setAttribute('style'); inline `<style>` and scripts stay forbidden.
 * `'self'` in connect-src covers the same-origin ws(s) signalling socket (CSP Level 3).
 */
export function playerContentSecurityPolicy(options: PlayerCspOptions = {}): string {
  const list = (base: readonly string[], extra: readonly string[] = []): string => [...base, ...extra].join(' ');
  return [
    "default-src 'none'",
    `script-src ${list(["'self'"], options.assetSrc)}`,
    `style-src ${list(["'self'"], options.assetSrc)}`,
    "style-src-attr 'unsafe-inline'",
    "img-src 'self' data: blob:",
    "media-src 'self' blob:",
    `connect-src ${list(["'self'"], options.connectSrc)}`,
    "base-uri 'none'",
    "form-action 'none'",
    `frame-ancestors ${list([], options.frameAncestors ?? ['*'])}`,
  ].join('; ');
}
