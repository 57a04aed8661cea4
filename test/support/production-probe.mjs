// Loaded into a production binary under test with NODE_OPTIONS=--import=<this file> (so it is not
// in process.execArgv): makes tsx and typescript unresolvable, for ESM (a resolve hook) and CommonJS
// (Module._resolveFilename), refuses to load any .ts/.mts/.cts file, and records in the file named by
// PIXELFLEET_PROBE_FILE every module the process loads and, at exit, its process.execArgv, as JSON
// lines. Proves that `pixelfleet` and `pixelfleet-agent` run compiled code with no TypeScript loader.
import { appendFileSync } from 'node:fs';
import Module, { register } from 'node:module';

const file = process.env.PIXELFLEET_PROBE_FILE;
if (file === undefined) throw new Error('production-probe: PIXELFLEET_PROBE_FILE is not set');

register('./production-probe-hooks.mjs', import.meta.url, { data: { file } });

const FORBIDDEN = /^(tsx|typescript)(\/|$)/;
const resolveFilename = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  if (FORBIDDEN.test(request)) throw Object.assign(new Error(`Cannot find module '${request}' (hidden by production-probe)`), { code: 'MODULE_NOT_FOUND' });
  const resolved = resolveFilename.call(this, request, ...rest);
  appendFileSync(file, `${JSON.stringify({ cjs: resolved })}\n`);
  return resolved;
};

process.on('exit', () => appendFileSync(file, `${JSON.stringify({ execArgv: process.execArgv })}\n`));
