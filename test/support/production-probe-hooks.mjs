// The ESM half of production-probe.mjs (runs on Node's loader thread).
import { appendFileSync } from 'node:fs';

const FORBIDDEN = /^(tsx|typescript)(\/|$)/;
let file;

export function initialize(data) {
  file = data.file;
}

export async function resolve(specifier, context, next) {
  if (FORBIDDEN.test(specifier)) throw Object.assign(new Error(`Cannot find package '${specifier}' (hidden by production-probe)`), { code: 'ERR_MODULE_NOT_FOUND' });
  const result = await next(specifier, context);
  if (/\.[mc]?ts$/.test(new URL(result.url).pathname)) throw new Error(`production-probe: ${result.url} is TypeScript`);
  appendFileSync(file, `${JSON.stringify({ esm: result.url })}\n`);
  return result;
}
