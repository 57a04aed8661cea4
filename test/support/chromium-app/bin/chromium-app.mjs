#!/usr/bin/env node
// Launches the chromium app (../chromium-app.ts) through tsx's loader, so a build's binary script
// can exec it like a packaged game binary: chromium-app.mjs <Project> -PixelStreamingURL=… …
import { register as registerHooks } from 'node:module';
import { register } from 'tsx/esm/api';

// Workspace packages from their TypeScript sources (their "source" export condition), as under
// `node --conditions=source`, which this file's callers do not pass.
registerHooks('data:text/javascript,export function resolve(s,c,n){return n(s,{...c,conditions:[...c.conditions,"source"]})}');
register();
await import('../chromium-app.ts');
