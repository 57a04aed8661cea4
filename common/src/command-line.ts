// A program's command line (`pixelfleet`, `pixelfleet admin …` and `pixelfleet-agent`): a table of
// its commands and the one dispatcher that finds the command in argv, answers --help with that
// command's own usage and --version for every command, reads the command's flags and runs it. A
// command only declares its words, usage, flags and what it runs.
import { parseArgs, type ParseArgsConfig } from 'node:util';

type FlagOptions = NonNullable<ParseArgsConfig['options']>;
/** What parseArgs returns for a command's flags (strict, no positionals). */
export type FlagValues<O extends FlagOptions> = ReturnType<typeof parseArgs<{ options: O; strict: true; allowPositionals: false }>>['values'];

/** Every command takes these; the dispatcher answers them, a command never sees them set. */
const STANDARD_FLAGS = {
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'v' },
} as const satisfies FlagOptions;

export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

/** A command's flags made no sense together (`service install` without --config): exit 2 with its usage. */
export class CliUsageError extends Error {}

export interface CliCommand {
  /** The words after the program name (`['service', 'install']`); `[]` is the program itself. */
  readonly words: readonly string[];
  /** Its arguments as its usage line shows them (`[--config <file>]`); empty for a group (its line shows its commands). */
  readonly synopsis: string;
  /** What it does, in one line (its group's usage lists it). */
  readonly about: string;
  /** The rest of its --help: flags explained, exit codes. Lines indented by two spaces. */
  readonly details?: string;
  /**
   * Reads its flags (node:util parseArgs, strict; throws on a bad one) and returns the run, or
   * which standard flag was given. Absent for a group: words that only lead to its commands.
   */
  readonly read?: (args: readonly string[]) => CliOutcome;
}

export interface CliProgram {
  /** `pixelfleet-agent`: the first word of every usage line and of the --version line. */
  readonly name: string;
  readonly version: string;
  /** Every command and group, the program itself (`words: []`) included. */
  readonly commands: readonly CliCommand[];
}

/** A command that runs: its flags are parsed with the standard ones, and `run` gets the values. */
export function command<O extends FlagOptions>(spec: {
  words: readonly string[];
  synopsis: string;
  about: string;
  details?: string;
  options: O;
  run: (flags: FlagValues<O>) => Promise<number>;
}): CliCommand {
  const { options, run, ...described } = spec;
  return {
    ...described,
    read: (args) => {
      const { values } = parseArgs({ args: [...args], options: { ...options, ...STANDARD_FLAGS }, strict: true, allowPositionals: false });
      // parseArgs cannot type a generic spread of options: the values are those of `options` plus the standard two.
      const flags = values as FlagValues<O> & FlagValues<typeof STANDARD_FLAGS>;
      if (flags.help === true) return 'help';
      if (flags.version === true) return 'version';
      return () => run(flags);
    },
  };
}

/** A group: its words lead to its commands; alone it is a usage error, with --help it lists them. */
export function group(spec: { words: readonly string[]; about: string; details?: string }): CliCommand {
  return { ...spec, synopsis: '' };
}

/** What a command's `read` found: --help, --version, nothing to run (a group alone), or the run. */
export type CliOutcome = 'help' | 'version' | 'usage' | (() => Promise<number>);

/** Runs the command argv names; returns the exit code (0 ok, 2 usage, else the command's own). */
export async function runCommandLine(program: CliProgram, argv: readonly string[], io: CliIo): Promise<number> {
  const found = findCommand(program, argv);
  const args = argv.slice(found.words.length);
  const usage = usageOf(program, found);
  let outcome: CliOutcome;
  try {
    outcome = (found.read ?? ((a: readonly string[]) => readGroup(found, a)))(args);
  } catch (err) {
    return usageError(err, usage, io);
  }
  switch (outcome) {
    case 'help':
      io.out(usage);
      return 0;
    case 'version':
      io.out(`${program.name} ${program.version}\n`);
      return 0;
    case 'usage':
      io.err(usage);
      return 2;
  }
  try {
    return await outcome();
  } catch (err) {
    if (err instanceof CliUsageError) return usageError(err, usage, io);
    throw err;
  }
}

/** What follows a group's words: `help` or --help, --version, or nothing; another word names no command of it. */
function readGroup(g: CliCommand, args: readonly string[]): CliOutcome {
  const [next] = args;
  // `help` as a word too, as many CLIs take it.
  if (next === 'help') return 'help';
  if (next !== undefined && !next.startsWith('-')) throw new CliUsageError(`unknown command "${[...g.words, next].join(' ')}"`);
  const { values } = parseArgs({ args: [...args], options: STANDARD_FLAGS, strict: true, allowPositionals: false });
  if (values.help === true) return 'help';
  if (values.version === true) return 'version';
  return 'usage';
}

function usageError(err: unknown, usage: string, io: CliIo): number {
  // parseArgs throws TypeErrors coded ERR_PARSE_ARGS_*; anything else is a bug, not a usage error.
  const parseError = err instanceof TypeError && 'code' in err && String(err.code).startsWith('ERR_PARSE_ARGS_');
  if (!(err instanceof CliUsageError) && !parseError) throw err;
  io.err(`error: ${err.message}\n\n${usage}`);
  return 2;
}

/** The command whose words argv starts with, the longest such (the program itself always matches). */
function findCommand(program: CliProgram, argv: readonly string[]): CliCommand {
  let best: CliCommand | undefined;
  for (const c of program.commands) {
    if (c.words.every((w, i) => argv[i] === w) && (best === undefined || c.words.length > best.words.length)) best = c;
  }
  if (best === undefined) throw new Error(`${program.name}: the command table has no entry for the program itself (words: [])`);
  return best;
}

/** The commands directly under a group. */
function commandsOf(program: CliProgram, parent: CliCommand): CliCommand[] {
  return program.commands.filter((c) => c.words.length === parent.words.length + 1 && parent.words.every((w, i) => c.words[i] === w));
}

/** A command's line: `<program> <words> <synopsis>`; a group shows `<command>` in its own usage, its commands in its parent's. */
function usageLine(program: CliProgram, c: CliCommand, inParent: boolean): string {
  const synopsis = c.read !== undefined ? c.synopsis : inParent ? `${commandsOf(program, c).map((sub) => sub.words.at(-1)).join('|')} …` : '<command>';
  return [program.name, ...c.words, synopsis].filter((s) => s !== '').join(' ');
}

/** Widest command line a group's usage lists in a column, what each does beside it. */
const LISTING_COLUMN = 56;

/** A command's --help: `Usage: <program> <words> <synopsis>`, what it does, then its commands (a group) and details. */
function usageOf(program: CliProgram, c: CliCommand): string {
  const subs = c.read === undefined ? commandsOf(program, c) : [];
  const lines = subs.map((s) => [usageLine(program, s, true), s.about] as const);
  const width = Math.max(0, ...lines.map(([l]) => l.length));
  // Short lines take what they do beside them; long ones (service install's flags) above it.
  const listed = ([l, about]: readonly [string, string]) => (width <= LISTING_COLUMN ? `  ${l.padEnd(width)}   ${about}\n` : `  ${l}\n      ${about}\n`);
  return [
    `Usage: ${usageLine(program, c, false)}\n`,
    `  ${c.about}\n`,
    lines.length > 0 ? `Commands:\n${lines.map(listed).join('')}` : '',
    c.details ?? '',
    'Every command takes --help (its own usage) and --version.\n',
  ].join('');
}
