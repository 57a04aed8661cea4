// The one rule for a project's extra Unreal arguments (`launchArgs`, StartSession.launch_args):
// the settings API refuses a list that breaks it, and the agent checks again before it builds a
// command line, so an argument the agent owns can never be overridden from a project's settings.

/** Arguments a project may add, at most. */
export const MAX_LAUNCH_ARGS = 64;
/** Characters per argument, at most. */
export const MAX_LAUNCH_ARG_CHARS = 512;

/**
 * Names of arguments the agent sets itself (`PixelStreaming` covers every -PixelStreaming… flag,
 * all aliases of the signalling URL across PS1 and PS2 included). Unreal matches `-Name=` values
 * case-insensitively and by substring (FParse::Value), so an argument is refused when its name or
 * its value contains one of these, in any case.
 */
export const PROTECTED_LAUNCH_ARG_NAMES: readonly string[] = ['PixelStreaming', 'ABSLOG', 'RenderOffScreen', 'ForceRes', 'ResX', 'ResY', 'Unattended'];

/** `-Name` or `-Name=value`; Name: a letter, then letters, digits, `_` or `.`. */
const LAUNCH_ARG = /^-([A-Za-z][A-Za-z0-9_.]*)(?:=(.*))?$/s;
/** A value is not empty and has no quote, white space or control character. */
const FORBIDDEN_VALUE_CHARS = /["'\s\u0000-\u001f\u007f]/;

export interface LaunchArgRefusal {
  /** The refused argument's index in the list; undefined when the list itself is refused. */
  index: number | undefined;
  /** `list`: not a list of at most MAX_LAUNCH_ARGS; `format`: not -Name[=value]; `protected`: names an argument the agent sets. */
  kind: 'list' | 'format' | 'protected';
  /** Why, for humans, without the argument itself (e.g. `has an empty value`). */
  why: string;
}

/** The first thing wrong with a list of launch arguments, or undefined when every one is accepted. */
export function checkLaunchArgs(args: unknown): LaunchArgRefusal | undefined {
  if (!Array.isArray(args) || args.length > MAX_LAUNCH_ARGS) return { index: undefined, kind: 'list', why: `must be a list of at most ${MAX_LAUNCH_ARGS} arguments` };
  for (const [index, arg] of (args as unknown[]).entries()) {
    const refusal = checkLaunchArg(arg);
    if (refusal) return { index, ...refusal };
  }
  return undefined;
}

function checkLaunchArg(arg: unknown): Omit<LaunchArgRefusal, 'index'> | undefined {
  const format = (why: string) => ({ kind: 'format', why }) as const;
  if (typeof arg !== 'string') return format('is not a string');
  if (arg.length > MAX_LAUNCH_ARG_CHARS) return format(`is longer than ${MAX_LAUNCH_ARG_CHARS} characters`);
  const m = LAUNCH_ARG.exec(arg);
  if (!m) return format('must look like -Name or -Name=value (Name: a letter, then letters, digits, _ or .)');
  const name = m[1]!.toLowerCase();
  const value = m[2];
  if (value === '') return format('has an empty value');
  if (value !== undefined && FORBIDDEN_VALUE_CHARS.test(value)) return format('has a quote, white space or control character in its value');
  for (const p of PROTECTED_LAUNCH_ARG_NAMES) {
    const lp = p.toLowerCase();
    if (name.includes(lp)) return { kind: 'protected', why: `would override -${p}, which the agent sets` };
    if (value?.toLowerCase().includes(lp)) return { kind: 'protected', why: `mentions -${p}, which the agent sets` };
  }
  return undefined;
}
