import { describe, expect, it } from 'vitest';
import { bundleDashboard } from './bundle';

describe('bundleDashboard', () => {
  it('builds the app into one script and one stylesheet that load nothing from elsewhere, versioned by their content', async () => {
    const bundle = await bundleDashboard();
    expect(await bundleDashboard()).toBe(bundle);
    expect(bundle.version).toMatch(/^[0-9a-f]{12}$/);
    expect(bundle.js.startsWith('"use strict";(()=>{') || bundle.js.startsWith('(()=>{')).toBe(true);
    expect(bundle.js).toMatch(/^[\x00-\x7f]*$/);
    expect(bundle.js).not.toMatch(/\bprocess\.env\b|\brequire\(/);
    // An air-gapped network: no fonts, imports or images from another origin.
    expect(bundle.css).not.toMatch(/@import|@font-face|url\(/);
    // Namespaces (w3.org) and examples in hints (example.com, reserved by RFC 2606) are text, not places to load from.
    expect(bundle.js).not.toMatch(/https?:\/\/(?!www\.w3\.org\/|[a-z.]*example\.com)/);
    expect(bundle.css).toMatch(/prefers-color-scheme: ?dark/);
  });
});
