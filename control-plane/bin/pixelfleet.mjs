#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so no build step is needed.
import { register } from 'tsx/esm/api';

register();
const { runControlPlaneCli } = await import('../src/main.ts');
process.exitCode = await runControlPlaneCli(process.argv.slice(2));
