import { builtinModules } from 'node:module';
import { describe, expect, it } from 'vitest';
import { bundlePlayer } from './bundle';

describe('bundlePlayer', () => {
  it('builds a browser bundle with no Node built-ins and under 400 KB', async () => {
    const { js, css } = await bundlePlayer();
    const builtins = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));
    const required = [...js.matchAll(/\brequire\(\s*["']([^"']+)["']\s*\)/g)].map((match) => match[1]);
    expect(required.filter((name) => name !== undefined && builtins.has(name))).toEqual([]);
    expect(js).not.toMatch(/\bprocess\.env\b/);
    expect(Buffer.byteLength(js)).toBeLessThan(400 * 1024);
    expect(js.startsWith('"use strict";(()=>{') || js.startsWith('(()=>{')).toBe(true);
    expect(css).toContain('.pf-player');
  });

  it('builds once and serves later calls from the cache', async () => {
    const first = await bundlePlayer();
    expect(await bundlePlayer()).toBe(first);
  });
});
