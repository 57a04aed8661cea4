#!/usr/bin/env node
// npm run build:app-job: compiles agent/native/app-job/app-job.c into app-job.exe beside it, where
// a Windows agent looks for it (needs x86_64-w64-mingw32-gcc).
import { register } from 'tsx/esm/api';

register();
const { buildAppJob } = await import('../src/launcher/app-job-build.ts');
try {
  console.log(`built ${await buildAppJob()}`);
} catch (err) {
  console.error(err instanceof Error ? err.message : String(err));
  process.exitCode = 1;
}
