import { describe, expect, it } from 'vitest';
import { parseListOutput, parseSweepOutput, windowsKillPlan, windowsListPlan, windowsSweepPlan } from './windows-kill-plan';

describe('windowsKillPlan', () => {
  it("asks the tree to close, then forces the launcher, whose job ends the tree", () => {
    expect(windowsKillPlan(4242)).toEqual({
      graceful: ['taskkill', '/PID', '4242', '/T'],
      forced: ['taskkill', '/PID', '4242', '/F'],
    });
  });

  it('refuses anything but a positive integer pid', () => {
    for (const pid of [0, -1, 1.5, Number.NaN]) expect(() => windowsKillPlan(pid)).toThrow(RangeError);
  });
});

describe('windowsSweepPlan', () => {
  it("runs the app-job launcher's --sweep on the build folder (no PowerShell)", () => {
    expect(windowsSweepPlan('C:\\pf\\app-job.exe', 'C:\\ProgramData\\Pixelfleet\\builds\\upl_1')).toEqual(['C:\\pf\\app-job.exe', '--sweep', 'C:\\ProgramData\\Pixelfleet\\builds\\upl_1']);
    expect(windowsSweepPlan('a.exe', '\\\\server\\share\\upl_1')).toEqual(['a.exe', '--sweep', '\\\\server\\share\\upl_1']);
  });

  it('refuses relative paths, double quotes and control characters', () => {
    for (const dir of ['builds\\upl_1', '/var/builds', 'C:\\a"b', 'C:\\a\nb']) {
      expect(() => windowsSweepPlan('a.exe', dir)).toThrow(RangeError);
      expect(() => windowsListPlan('a.exe', dir)).toThrow(RangeError);
    }
  });

  it('lists without stopping through --list, whose answer has its own summary', () => {
    expect(windowsListPlan('a.exe', 'C:\\t\\x')).toEqual(['a.exe', '--list', 'C:\\t\\x']);
    expect(parseListOutput('running 40\r\nrunning 44\r\nfound 2 of 9 processes\r\n')).toEqual([40, 44]);
    expect(() => parseListOutput('')).toThrow('app-job.exe --list did not answer');
    // A sweep's answer is not a listing's, nor the other way round.
    expect(() => parseListOutput('swept 0 of 9 processes')).toThrow('did not answer');
    expect(() => parseSweepOutput('found 0 of 9 processes')).toThrow('did not answer');
  });
});

describe('parseSweepOutput', () => {
  it('returns the pids it stopped, once its summary line proves it ran', () => {
    expect(parseSweepOutput('stopped 5120\r\nstopped 5124\r\nswept 2 of 61 processes\r\n')).toEqual([5120, 5124]);
    expect(parseSweepOutput('swept 0 of 61 processes\r\n')).toEqual([]);
  });

  it('takes a tool that printed nothing, or no summary, as a failure: never as "nothing left"', () => {
    expect(() => parseSweepOutput('')).toThrow('app-job.exe --sweep did not answer');
    expect(() => parseSweepOutput('stopped 5120\r\n')).toThrow('did not answer');
    expect(() => parseSweepOutput('swept 2 of 61 processes\r\nstopped 5120\r\n')).toThrow('did not answer');
  });

  it('refuses a summary that does not count the lines before it', () => {
    expect(() => parseSweepOutput('stopped 5120\r\nswept 2 of 61 processes')).toThrow('printed 1 stopped processes but counted 2');
  });
});
