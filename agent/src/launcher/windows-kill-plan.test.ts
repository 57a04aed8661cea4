import { describe, expect, it } from 'vitest';
import { windowsKillPlan, windowsSweepPlan } from './windows-kill-plan';

describe('windowsKillPlan', () => {
  it('asks the tree to close, then forces it', () => {
    expect(windowsKillPlan(4242)).toEqual({
      graceful: ['taskkill', '/PID', '4242', '/T'],
      forced: ['taskkill', '/PID', '4242', '/T', '/F'],
    });
  });

  it('refuses anything but a positive integer pid', () => {
    for (const pid of [0, -1, 1.5, Number.NaN]) expect(() => windowsKillPlan(pid)).toThrow(RangeError);
  });
});

describe('windowsSweepPlan', () => {
  it('stops every process whose image lies under the build folder and prints the ids it stopped', () => {
    const argv = windowsSweepPlan('C:\\ProgramData\\Pixelfleet\\builds\\upl_1');
    expect(argv.slice(0, -1)).toEqual(['powershell.exe', '-NoProfile', '-NonInteractive', '-ExecutionPolicy', 'Bypass', '-Command']);
    expect(argv.at(-1)).toBe(
      "$prefix = 'C:\\ProgramData\\Pixelfleet\\builds\\upl_1\\'; Get-CimInstance Win32_Process | " +
        'Where-Object { $_.ExecutablePath -and $_.ExecutablePath.StartsWith($prefix, [System.StringComparison]::OrdinalIgnoreCase) } | ' +
        'ForEach-Object { try { Stop-Process -Id $_.ProcessId -Force -ErrorAction Stop; $_.ProcessId } catch {} }',
    );
  });

  it('ends the prefix with a separator, so a sibling folder with a longer name is spared', () => {
    expect(windowsSweepPlan('D:\\b\\upl_1\\').at(-1)).toContain("$prefix = 'D:\\b\\upl_1\\';");
    expect(windowsSweepPlan('D:\\b\\upl_1').at(-1)).toContain("$prefix = 'D:\\b\\upl_1\\';");
  });

  it('doubles every PowerShell single-quote character in the path', () => {
    expect(windowsSweepPlan("C:\\it's\\b\u2019x").at(-1)).toContain("$prefix = 'C:\\it''s\\b\u2019\u2019x\\';");
  });

  it('refuses relative paths, double quotes and control characters', () => {
    for (const dir of ['builds\\upl_1', '/var/builds', 'C:\\a"b', 'C:\\a\nb']) expect(() => windowsSweepPlan(dir)).toThrow(RangeError);
  });
});
