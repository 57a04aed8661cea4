#!/usr/bin/env node
// npm run build:app-job: compiles agent/native/app-job/app-job.c into app-job.exe beside it, where
// a Windows agent looks for it (needs x86_64-w64-mingw32-gcc).
import { register as registerHooks } from 'node:module';
import { register } from 'tsx/esm/api';

// Workspace packages from their TypeScript sources (their "source" export condition), as under
// `node --conditions=source`, which this file's callers do not pass.
registerHooks('data:text/javascript,export function resolve(s,c,n){return n(s,{...c,conditions:[...c.conditions,"source"]})}');
register();
const { buildAppJob } = await import('../src/launcher/app-job-build.ts');
try {
  console.log(`built ${await buildAppJob()}`);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}
