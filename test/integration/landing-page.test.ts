// The control plane's address in a browser: a landing page linking to the API docs, each link
// answered by the running server (real HTTP).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';

let t: TestControlPlane;
beforeAll(async () => {
  t = await startTestControlPlane({ overrides: { geoip: { enabled: false } } });
});
afterAll(async () => {
  await t.destroy();
});

describe('GET /', () => {
  it('is an HTML page linking to /docs, and every link it has works', async () => {
    const res = await fetch(`${t.started.httpOrigin}/`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
    const html = await res.text();
    expect(html).not.toContain('<script');
    const links = [...html.matchAll(/href="([^"]+)"/g)].map((m) => m[1]!);
    expect(links).toContain('/docs');
    for (const link of links) {
      const target = await fetch(`${t.started.httpOrigin}${link}`);
      expect(target.status, link).toBe(200);
    }
    expect(await (await fetch(`${t.started.httpOrigin}/docs`)).text()).toContain('swagger');
  });
});
