// Entry of the one-file bundle (dist/agent.cjs, see package/agent-bundle.ts): the same CLI as
// bin/pixelfleet-agent.mjs, without a TypeScript loader.
import { runAgentCli } from './main';

runAgentCli(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  },
);
