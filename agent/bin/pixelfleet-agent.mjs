#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so no build step is needed.
import { register } from 'tsx/esm/api';

register();
const { runAgentCli } = await import('../src/main.ts');
process.exitCode = await runAgentCli(process.argv.slice(2));
