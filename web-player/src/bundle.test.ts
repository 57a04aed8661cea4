import { builtinModules } from 'node:module';
import { describe, expect, it } from 'vitest';
import { bundlePlayer, FRONTEND_LIBRARIES, FRONTEND_LIBRARY } from './bundle';

/** A setting only the UE 5.6+ frontend libraries have (`Flags.BrowserSendOffer`): tells the generations apart. */
const UE57_ONLY_SETTING = 'Browser send offer (4.27 ONLY)';

describe('bundlePlayer', () => {
  it.each(FRONTEND_LIBRARIES)('builds a browser bundle on %s with no Node built-ins and under 400 KB', async (library) => {
    const { js, css } = await bundlePlayer(library);
    const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
    const required = [...js.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)].map((match) => match[1]);
    expect(required.filter((name) => name !== undefined && builtins.has(name))).toEqual([]);
    expect(js).not.toMatch(/\bprocess\.env\b/);
    expect(Buffer.byteLength(js)).toBeLessThan(400 * 1024);
    expect(js.startsWith('"use strict";(()=>{') || js.startsWith('(()=>{')).toBe(true);
    expect(css).toContain('.pf-player');
  });

  it('serves the UE 5.7 library by default, and the 5.5 one only when asked', async () => {
    expect(FRONTEND_LIBRARY).toBe('@epicgames-ps/lib-pixelstreamingfrontend-ue5.7');
    expect((await bundlePlayer()).js).toContain(UE57_ONLY_SETTING);
    expect((await bundlePlayer('@epicgames-ps/lib-pixelstreamingfrontend-ue5.5')).js).not.toContain(UE57_ONLY_SETTING);
  });

  it('builds once per library and serves later calls from the cache', async () => {
    const first = await bundlePlayer();
    expect(await bundlePlayer()).toBe(first);
    expect(await bundlePlayer(FRONTEND_LIBRARY)).toBe(first);
    const older = await bundlePlayer('@epicgames-ps/lib-pixelstreamingfrontend-ue5.5');
    expect(older).not.toBe(first);
    expect(await bundlePlayer('@epicgames-ps/lib-pixelstreamingfrontend-ue5.5')).toBe(older);
  });
});
