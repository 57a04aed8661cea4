#!/usr/bin/env node
// Runs the TypeScript sources through tsx's loader, so no build step is needed.
import { register } from 'tsx/esm/api';

register();
const { runControlPlaneCli } = await import('../src/main.ts');
// Exit once the command is done (for serve: once its shutdown closed everything it owns): a peer
// that stopped answering, such as a frozen agent, must not hold the process up until its TCP
// connection times out. stdout and stderr are synchronous for files and pipes on Linux.
process.exit(await runControlPlaneCli(process.argv.slice(2)));
