#!/usr/bin/env node
// Runs the compiled JavaScript in ../dist (npm run build); no TypeScript loader in this process.
const { runControlPlaneCli } = await import('../dist/main.js').catch((err) => {
  if (err?.code === 'ERR_MODULE_NOT_FOUND' && /[\\/]dist[\\/]main\.js/.test(String(err.message))) {
    console.error('control-plane/dist is missing: run `npm run build` first');
    process.exit(1);
  }
  throw err;
});

// A reader that went away (`pixelfleet admin events | head`) ends the command quietly, as a writer
// to a closed pipe should; any other failure of stdout or stderr is still an error.
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (err) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
}

// Exit once the command is done (for serve: once its shutdown closed everything it owns): a peer
// that stopped answering, such as a frozen agent, must not hold the process up until its TCP
// connection times out. stdout and stderr are synchronous for files and pipes on Linux.
process.exit(await runControlPlaneCli(process.argv.slice(2)));
