// The agent's dispatcher on a small table: each command's own usage for --help, the version for
// --version, groups, unknown words, bad flags and a command's own usage errors (exit 2).
import { describe, expect, it } from 'vitest';
import { CliUsageError, command, group, runCommandLine, type CliProgram } from './command-line';

function program(ran: string[]): CliProgram {
  return {
    name: 'tool',
    version: '1.2.3',
    commands: [
      group({ words: [], about: 'a tool' }),
      command({
        words: ['go'],
        synopsis: '[--fast]',
        about: 'goes',
        details: '  --fast  faster\n',
        options: { fast: { type: 'boolean', default: false } },
        run: (flags) => {
          ran.push(`go fast=${flags.fast}`);
          return Promise.resolve(0);
        },
      }),
      group({ words: ['box'], about: 'boxes', details: '  Boxes only.\n' }),
      command({
        words: ['box', 'open'],
        synopsis: '--lid <name>',
        about: 'opens a box',
        options: { lid: { type: 'string' } },
        run: (flags) => {
          if (flags.lid === undefined) throw new CliUsageError('box open needs --lid <name>');
          ran.push(`open ${flags.lid}`);
          return Promise.resolve(3);
        },
      }),
    ],
  };
}

async function cli(argv: string[]) {
  const ran: string[] = [];
  let out = '';
  let err = '';
  const code = await runCommandLine(program(ran), argv, { out: (t) => (out += t), err: (t) => (err += t) });
  return { code, out, err, ran };
}

describe('runCommandLine', () => {
  it('runs the command argv names, with its flags', async () => {
    expect(await cli(['go', '--fast'])).toEqual({ code: 0, out: '', err: '', ran: ['go fast=true'] });
    expect(await cli(['box', 'open', '--lid', 'red'])).toEqual({ code: 3, out: '', err: '', ran: ['open red'] });
  });

  it('--help (or -h) prints the usage of the command it follows, without running it', async () => {
    const go = await cli(['go', '--fast', '--help']);
    expect(go).toEqual({ code: 0, out: 'Usage: tool go [--fast]\n  goes\n  --fast  faster\nEvery command takes --help (its own usage) and --version.\n', err: '', ran: [] });
    expect((await cli(['box', 'open', '-h'])).out).toMatch(/^Usage: tool box open --lid <name>\n {2}opens a box\n/);
    // A group lists its commands; `help` is taken as --help there.
    const box = await cli(['box', '--help']);
    expect(box).toMatchObject({ code: 0, err: '' });
    expect(box.out).toBe('Usage: tool box <command>\n  boxes\nCommands:\n  tool box open --lid <name>   opens a box\n  Boxes only.\nEvery command takes --help (its own usage) and --version.\n');
    expect((await cli(['box', 'help'])).out).toBe(box.out);
    expect((await cli(['--help'])).out).toBe('Usage: tool <command>\n  a tool\nCommands:\n  tool go [--fast]   goes\n  tool box open …    boxes\nEvery command takes --help (its own usage) and --version.\n');
  });

  it('--version (or -v) prints the version on every command and group', async () => {
    for (const argv of [[], ['go'], ['box'], ['box', 'open', '--lid', 'x']]) {
      expect(await cli([...argv, '--version']), argv.join(' ')).toEqual({ code: 0, out: 'tool 1.2.3\n', err: '', ran: [] });
    }
    expect((await cli(['-v'])).out).toBe('tool 1.2.3\n');
  });

  it('a group alone prints its usage on stderr, exit 2', async () => {
    const box = await cli(['box']);
    expect(box).toMatchObject({ code: 2, out: '', ran: [] });
    expect(box.err).toMatch(/^Usage: tool box <command>\n/);
    expect((await cli([])).err).toMatch(/^Usage: tool <command>\n/);
  });

  it('an unknown word, a bad flag or a command\'s usage error: the error, then that command\'s usage, exit 2', async () => {
    const unknown = await cli(['box', 'shut']);
    expect(unknown).toMatchObject({ code: 2, out: '', ran: [] });
    expect(unknown.err).toMatch(/^error: unknown command "box shut"\n\nUsage: tool box <command>\n/);
    const flag = await cli(['go', '--slow']);
    expect(flag).toMatchObject({ code: 2, out: '', ran: [] });
    expect(flag.err).toMatch(/^error: Unknown option '--slow'[^\n]*\n\nUsage: tool go \[--fast\]\n/);
    expect((await cli(['box', '--lid', 'x'])).err).toMatch(/^error: Unknown option '--lid'[^\n]*\n\nUsage: tool box <command>\n/);
    const own = await cli(['box', 'open']);
    expect(own).toMatchObject({ code: 2, out: '', ran: [] });
    expect(own.err).toMatch(/^error: box open needs --lid <name>\n\nUsage: tool box open --lid <name>\n/);
  });

  it('an error that is not about usage is the caller\'s (a bug, not exit 2)', async () => {
    const broken: CliProgram = {
      name: 'tool',
      version: '1',
      commands: [group({ words: [], about: 'a tool' }), command({ words: ['fail'], synopsis: '', about: 'fails', options: {}, run: () => Promise.reject(new Error('boom')) })],
    };
    await expect(runCommandLine(broken, ['fail'], { out: () => undefined, err: () => undefined })).rejects.toThrow('boom');
  });
});
