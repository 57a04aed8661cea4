import { describe, expect, it } from 'vitest';
import { dashboardAssetNames, dashboardContentSecurityPolicy, renderDashboardPage } from './page';

describe('the dashboard shell', () => {
  it('names the versioned assets under the asset base and carries the public path, escaped', () => {
    const html = renderDashboardPage({ basePath: '/a"b<c/', assetBase: '/x/assets/', version: '0123456789ab' });
    expect(html).toContain('<script src="/x/assets/dashboard.0123456789ab.js" defer></script>');
    expect(html).toContain('<link rel="stylesheet" href="/x/assets/dashboard.0123456789ab.css">');
    expect(html).toContain('data-base-path="/a&quot;b&lt;c"');
    // No inline script or style for the policy to allow.
    expect(html).not.toMatch(/<script>|<style|style=/);
    expect(dashboardAssetNames('v')).toEqual({ js: 'dashboard.v.js', css: 'dashboard.v.css' });
  });

  it("is served with a policy that allows only the page's own scripts, styles and requests, and no framing", () => {
    const policy = Object.fromEntries(dashboardContentSecurityPolicy().split('; ').map((directive): [string, string] => [directive.split(' ')[0]!, directive.split(' ').slice(1).join(' ')]));
    expect(policy).toEqual({
      'default-src': "'none'",
      'script-src': "'self'",
      'style-src': "'self'",
      'img-src': "'self' data:",
      'connect-src': "'self'",
      'base-uri': "'none'",
      'form-action': "'self'",
      'frame-ancestors': "'none'",
    });
  });
});
