import { describe, expect, it } from 'vitest';
import { playerContentSecurityPolicy, renderPlayerPage } from './page';

describe('renderPlayerPage', () => {
  it('links the bundle from the asset base and carries the project id in a data attribute', () => {
    const html = renderPlayerPage({ projectId: 'proj_42', assetBase: '/share/assets/', title: 'Demo' });
    expect(html).toContain('<script src="/share/assets/player.js" defer></script>');
    expect(html).toContain('<link rel="stylesheet" href="/share/assets/player.css">');
    expect(html).toContain('<main id="pixelfleet-player" data-project-id="proj_42"></main>');
    expect(html).toContain('<title>Demo</title>');
  });

  it('has no inline script or style', () => {
    const html = renderPlayerPage({ projectId: 'p', assetBase: '/a' });
    expect(html.match(/<script\b[^>]*>/g)).toEqual(['<script src="/a/player.js" defer>']);
    expect(html).not.toMatch(/<style\b|\sstyle=|\son[a-z]+=/i);
  });

  it('escapes everything it is given', () => {
    const html = renderPlayerPage({ projectId: '"><script>alert(1)</script>', title: '<b>&</b>', assetBase: '/x"y' });
    expect(html).toContain('data-project-id="&quot;&gt;&lt;script&gt;alert(1)&lt;/script&gt;"');
    expect(html).toContain('<title>&lt;b&gt;&amp;&lt;/b&gt;</title>');
    expect(html).toContain('src="/x&quot;y/player.js"');
    expect(html).not.toContain('<script>alert');
  });
});

describe('playerContentSecurityPolicy', () => {
  it('allows only our own scripts and styles, and any framing page by default', () => {
    const csp = playerContentSecurityPolicy();
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("style-src 'self'");
    expect(csp).toContain("connect-src 'self'");
    expect(csp).toContain('frame-ancestors *');
    expect(csp).not.toMatch(/script-src[^;]*unsafe/);
  });

  it('adds extra sources when asked', () => {
    const csp = playerContentSecurityPolicy({ connectSrc: ['https://stats.example'], assetSrc: ['https://cdn.example'], frameAncestors: ["'self'"] });
    expect(csp).toContain("connect-src 'self' https://stats.example");
    expect(csp).toContain("script-src 'self' https://cdn.example");
    expect(csp).toContain("frame-ancestors 'self'");
  });
});
