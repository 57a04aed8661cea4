// The one launch-argument rule, as both the settings API and the agent apply it: each refusal
// kind with its index and reason, the limits at their edges, and every protected name.
import { describe, expect, it } from 'vitest';
import { checkLaunchArgs, MAX_LAUNCH_ARG_CHARS, MAX_LAUNCH_ARGS, PROTECTED_LAUNCH_ARG_NAMES } from './launch-args';

describe('checkLaunchArgs', () => {
  it('accepts -Name and -Name=value, up to 64 arguments of up to 512 characters', () => {
    expect(checkLaunchArgs([])).toBeUndefined();
    expect(checkLaunchArgs(['-AudioMixer', '-Res.Scale=1.5', '-ExecCmds=r.ScreenPercentage=75,t.MaxFPS=60', '-X=C:\\data'])).toBeUndefined();
    expect(checkLaunchArgs(Array.from({ length: MAX_LAUNCH_ARGS }, (_, i) => `-A${i}`))).toBeUndefined();
    expect(checkLaunchArgs([`-N=${'x'.repeat(MAX_LAUNCH_ARG_CHARS - 3)}`])).toBeUndefined();
  });

  it('refuses a list that is not one, or longer than 64', () => {
    const list = { index: undefined, kind: 'list', why: 'must be a list of at most 64 arguments' };
    expect(checkLaunchArgs('-AudioMixer')).toEqual(list);
    expect(checkLaunchArgs(Array.from({ length: MAX_LAUNCH_ARGS + 1 }, (_, i) => `-A${i}`))).toEqual(list);
  });

  const format: [unknown, string][] = [
    [42, 'is not a string'],
    [`-N=${'x'.repeat(MAX_LAUNCH_ARG_CHARS - 2)}`, 'is longer than 512 characters'],
    ['AudioMixer', 'must look like -Name or -Name=value (Name: a letter, then letters, digits, _ or .)'],
    ['-1Name', 'must look like -Name or -Name=value (Name: a letter, then letters, digits, _ or .)'],
    ['-AudioMixer\n', 'must look like -Name or -Name=value (Name: a letter, then letters, digits, _ or .)'],
    ['-Name=', 'has an empty value'],
    ['-Name="x"', 'has a quote, white space or control character in its value'],
    ['-Name=a b', 'has a quote, white space or control character in its value'],
    ['-Name=a\u00a0b', 'has a quote, white space or control character in its value'],
    ['-Name=a\u0000b', 'has a quote, white space or control character in its value'],
  ];
  for (const [arg, why] of format) {
    it(`refuses ${JSON.stringify(arg)}: ${why}`, () => {
      expect(checkLaunchArgs(['-ok', arg])).toEqual({ index: 1, kind: 'format', why });
    });
  }

  it('refuses every protected name, in any case, in the name or the value', () => {
    expect(PROTECTED_LAUNCH_ARG_NAMES).toEqual(['PixelStreaming', 'ABSLOG', 'RenderOffScreen', 'ForceRes', 'ResX', 'ResY', 'Unattended']);
    for (const p of PROTECTED_LAUNCH_ARG_NAMES) {
      expect(checkLaunchArgs([`-${p.toUpperCase()}=1`])).toEqual({ index: 0, kind: 'protected', why: `would override -${p}, which the agent sets` });
      expect(checkLaunchArgs([`-My${p.toLowerCase()}`])).toEqual({ index: 0, kind: 'protected', why: `would override -${p}, which the agent sets` });
      expect(checkLaunchArgs([`-Foo=-${p}=1`])).toEqual({ index: 0, kind: 'protected', why: `mentions -${p}, which the agent sets` });
    }
    expect(checkLaunchArgs(['-PixelStreamingURL=ws://evil:1'])).toEqual({ index: 0, kind: 'protected', why: 'would override -PixelStreaming, which the agent sets' });
  });
});
