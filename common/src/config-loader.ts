// The one config loader of both processes (the control plane's `PIXELFLEET_*`, the agent's
// `PIXELFLEET_AGENT_*`): a JSON file, then values a caller passes (tests, the demo), then
// environment variables naming known leaf keys, validated against the process's zod schema, then
// frozen. Every problem is a ConfigError whose message names the key; the processes exit 78 on it.
import { readFileSync } from 'node:fs';
import { type z } from 'zod';

/** A configuration problem; the message names the offending key. */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
}

/** `http.port` → `PIXELFLEET_HTTP__PORT`; `dataDir` → `PIXELFLEET_DATA_DIR`. */
export function envNameForKey(prefix: string, dottedKey: string): string {
  return (
    prefix +
    dottedKey
      .split('.')
      .map((segment) => segment.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase())
      .join('__')
  );
}

/** How an environment variable's text becomes a leaf's value. */
export type EnvLeafKind = 'string' | 'number' | 'boolean' | 'json';

export interface ConfigLoad<T> {
  schema: z.ZodType<T>;
  /** `PIXELFLEET_` or `PIXELFLEET_AGENT_`: the variable of leaf `http.port` is `<prefix>HTTP__PORT`. */
  envPrefix: string;
  /** The leaf keys an environment variable may set, with how its text is read. */
  envLeaves: Readonly<Record<string, EnvLeafKind>>;
  /** Path of a JSON config file (an object); without one, the rest and the schema's defaults apply. */
  file?: string | undefined;
  /** Values that win over the file and lose to the environment (tests, the demo). */
  overrides?: Record<string, unknown> | undefined;
  env?: Readonly<Record<string, string | undefined>> | undefined;
  /** Last touches on the parsed config before it is frozen (a relative dataDir made absolute). */
  finish?: (parsed: T) => T;
}

/** The config: file, then overrides, then environment, parsed by the schema, finished, frozen. @throws ConfigError */
export function loadConfig<T>(load: ConfigLoad<T>): T {
  const fromFile = load.file === undefined ? {} : readConfigFile(load.file);
  const merged = deepMerge(fromFile, load.overrides ?? {});
  const raw = applyEnvOverrides(merged, load.envLeaves, load.env ?? {}, load.envPrefix);
  const parsed = parseWithSchema(load.schema, raw);
  return deepFreeze(load.finish ? load.finish(parsed) : parsed);
}

/** Reads and parses a JSON config file, which must hold an object; a missing or malformed file is a ConfigError. */
function readConfigFile(path: string): Record<string, unknown> {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new ConfigError(`config file ${path} cannot be read: ${(err as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = JSON.parse(text) as unknown;
  } catch (err) {
    throw new ConfigError(`config file ${path} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new ConfigError(`config file ${path} must hold a JSON object`);
  return parsed as Record<string, unknown>;
}

/**
 * Overlays environment variables onto the raw file object. Only variables that name a known
 * leaf key are read (others belong to other tools); their text is parsed by the leaf's kind.
 */
function applyEnvOverrides(
  raw: Record<string, unknown>,
  leaves: Readonly<Record<string, EnvLeafKind>>,
  env: Readonly<Record<string, string | undefined>>,
  prefix: string,
): Record<string, unknown> {
  const out: Record<string, unknown> = structuredClone(raw);
  for (const [key, kind] of Object.entries(leaves)) {
    const name = envNameForKey(prefix, key);
    const text = env[name];
    if (text === undefined) continue;
    let value: unknown = text;
    if (kind === 'number') {
      value = text.trim() === '' ? Number.NaN : Number(text);
      if (!Number.isFinite(value)) throw new ConfigError(`config key "${key}": environment variable ${name} is not a number`);
    } else if (kind === 'boolean') {
      if (text !== 'true' && text !== 'false') throw new ConfigError(`config key "${key}": environment variable ${name} must be true or false`);
      value = text === 'true';
    } else if (kind === 'json') {
      try {
        value = JSON.parse(text) as unknown;
      } catch {
        throw new ConfigError(`config key "${key}": environment variable ${name} is not valid JSON`);
      }
    }
    const path = key.split('.');
    let node: Record<string, unknown> = out;
    for (const segment of path.slice(0, -1)) {
      const next = node[segment];
      if (typeof next !== 'object' || next === null || Array.isArray(next)) node[segment] = {};
      node = node[segment] as Record<string, unknown>;
    }
    node[path[path.length - 1]!] = value;
  }
  return out;
}

/** Parses with the schema; the first problem becomes a ConfigError naming its key. */
function parseWithSchema<T>(schema: z.ZodType<T>, raw: unknown): T {
  const result = schema.safeParse(raw);
  if (result.success) return result.data;
  const issue = result.error.issues[0]!;
  const where = issue.path.map(String).join('.');
  if (issue.code === 'unrecognized_keys') {
    const keys = issue.keys.map((k) => (where ? `${where}.${k}` : k));
    throw new ConfigError(`unknown config key ${keys.map((k) => `"${k}"`).join(', ')}`);
  }
  throw new ConfigError(`config key "${where || '(root)'}": ${issue.message}`);
}

/** Recursively freezes a parsed config so no module can change it after start. */
function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

/** Merges plain objects key by key (arrays and scalars in `over` replace those in `base`). */
function deepMerge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    const bothObjects =
      typeof value === 'object' && value !== null && !Array.isArray(value) &&
      typeof prev === 'object' && prev !== null && !Array.isArray(prev);
    out[key] = bothObjects ? deepMerge(prev as Record<string, unknown>, value as Record<string, unknown>) : value;
  }
  return out;
}
