#!/usr/bin/env node
// Launches the mock Unreal app (../mock-unreal.ts) through tsx's loader, so it runs without a build
// step and can be spawned like a packaged game binary: mock-unreal.mjs <Project> -PixelStreamingURL=…
import { register as registerHooks } from 'node:module';
import { register } from 'tsx/esm/api';

// Workspace packages from their TypeScript sources (their "source" export condition), as under
// `node --conditions=source`, which this file's callers do not pass.
registerHooks('data:text/javascript,export function resolve(s,c,n){return n(s,{...c,conditions:[...c.conditions,"source"]})}');
register();
await import('../mock-unreal.ts');
