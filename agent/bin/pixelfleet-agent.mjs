#!/usr/bin/env node
// Runs the compiled JavaScript in ../dist (npm run build); no TypeScript loader in this process.
const { runAgentCli } = await import('../dist/main.js').catch((err) => {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && /[\\/]dist[\\/]main\.js/.test(String(err.message))) {
    console.error('agent/dist is missing: run `npm run build` first');
    process.exit(1);
  }
  throw err;
});

process.exitCode = await runAgentCli(process.argv.slice(2));
