// Doctor's host checks with real parts: nvidia-smi stand-ins as real executables, real UDP binds
// (a port held by this test is reported), real statfs against thresholds, real launcher files.
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createSocket, type Socket } from 'node:dgram';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { formatDoctorLines } from './doctor-line';
import { checkAppLauncher, checkBuildCacheDisk, checkDataDisk, checkGpu, checkUdpPorts } from './host-checks';

const dirs: string[] = [];
const sockets: Socket[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  for (const s of sockets.splice(0)) s.close();
});
function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-host-'));
  dirs.push(d);
  return d;
}
function script(body: string): string {
  const path = join(tempDir(), 'nvidia-smi');
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}
async function holdUdpPort(): Promise<number> {
  const s = createSocket('udp4');
  sockets.push(s);
  await new Promise<void>((r) => s.bind(0, r));
  return s.address().port;
}

describe('checkGpu', () => {
  it('lists what nvidia-smi reports', async () => {
    const smi = script('echo "$@" > "$(dirname "$0")/args"; printf "NVIDIA RTX A4000, 552.22, 16376 MiB\\nNVIDIA L4, 552.22, 23034 MiB\\n"');
    expect(await checkGpu(smi)).toEqual({ check: 'gpu', verdict: 'ok', detail: 'NVIDIA RTX A4000, 552.22, 16376 MiB; NVIDIA L4, 552.22, 23034 MiB' });
    expect(readFileSync(join(dirname(smi), 'args'), 'utf8')).toBe('--query-gpu=name,driver_version,memory.total --format=csv,noheader\n');
  });

  it('fails when nvidia-smi cannot talk to the driver, quoting it', async () => {
    const smi = script('echo "NVIDIA-SMI has failed because it couldn\'t communicate with the NVIDIA driver."; exit 9');
    expect(await checkGpu(smi)).toEqual({ check: 'gpu', verdict: 'fail', detail: `${smi} failed (exit 9): NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.` });
  });

  it('warns "not found" without nvidia-smi', async () => {
    const missing = join(tempDir(), 'nvidia-smi');
    expect(await checkGpu(missing)).toEqual({ check: 'gpu', verdict: 'warn', detail: `not found (no ${missing} on PATH); Pixel Streaming needs a GPU encoder` });
  });
});

describe('checkUdpPorts', () => {
  it('binds the first, middle and last port of the range', async () => {
    const port = await holdUdpPort();
    sockets.pop()!.close();
    const line = await checkUdpPorts({ min: port, max: port });
    expect(line).toEqual({ check: 'udp ports', verdict: 'ok', detail: `${port}-${port} (1 ports): bound ${port}; open this range for UDP in the firewall` });
  });

  it('fails when no sampled port can be bound, naming it', async () => {
    const port = await holdUdpPort();
    expect(await checkUdpPorts({ min: port, max: port })).toEqual({ check: 'udp ports', verdict: 'fail', detail: `${port}-${port} (1 ports): cannot bind ${port} (EADDRINUSE)` });
  });

  it('warns when some sampled ports are taken', async () => {
    const port = await holdUdpPort();
    const min = port - 2;
    const line = await checkUdpPorts({ min, max: port });
    expect(line.verdict).toBe('warn');
    expect(line.detail).toBe(`${min}-${port} (3 ports): cannot bind ${port} (EADDRINUSE)`);
  });

  it('warns without a range: a firewall cannot open just some ports', async () => {
    expect((await checkUdpPorts(undefined)).verdict).toBe('warn');
  });
});

describe('disk checks', () => {
  it('judges the free space of the data dir (or its nearest existing parent) against the thresholds', () => {
    const dir = join(tempDir(), 'not', 'yet');
    expect(checkDataDisk(dir, { minFreeBytes: 1, lowFreeBytes: 2 })).toMatchObject({ verdict: 'ok', detail: expect.stringMatching(/ free in .*not\/yet$/) as string });
    expect(checkDataDisk(dir, { minFreeBytes: 1, lowFreeBytes: Number.MAX_SAFE_INTEGER }).verdict).toBe('warn');
    expect(checkDataDisk(dir, { minFreeBytes: Number.MAX_SAFE_INTEGER }).detail).toMatch(/, below 8192\.0 TiB: sessions and builds will fail$/);
  });

  it('warns when the build cache may grow past the free space', () => {
    const dir = tempDir();
    expect(checkBuildCacheDisk(dir, 1024).verdict).toBe('ok');
    expect(checkBuildCacheDisk(dir, Number.MAX_SAFE_INTEGER)).toMatchObject({ verdict: 'warn', detail: expect.stringContaining('lower buildCache.maxBytes') as string });
  });
});

describe('checkAppLauncher', () => {
  it('on Windows: ok naming the file, fail when it is missing (or not a file): no session could start', () => {
    const dir = tempDir();
    const exe = join(dir, 'app-job.exe');
    writeFileSync(exe, 'MZ');
    expect(checkAppLauncher('win32', exe)).toEqual({ check: 'app launcher', verdict: 'ok', detail: exe });
    const missing = join(dir, 'gone.exe');
    const refused = { check: 'app launcher', verdict: 'fail', detail: `${missing} is missing: every session will be refused (NO_APP_JOB); extract the whole agent zip into the install folder` };
    expect(checkAppLauncher('win32', missing)).toEqual(refused);
    mkdirSync(missing);
    expect(checkAppLauncher('win32', missing)).toEqual(refused);
  });

  it('elsewhere: ok, not needed, naming the path a Windows agent would use and whether it is there', () => {
    const exe = join(tempDir(), 'app-job.exe');
    expect(checkAppLauncher('linux', exe)).toEqual({ check: 'app launcher', verdict: 'ok', detail: `not needed on linux (apps run directly); a Windows agent would run them under ${exe} (not there)` });
    writeFileSync(exe, 'MZ');
    expect(checkAppLauncher('linux', exe).detail).toMatch(/ \(present\)$/);
  });

  it('looks beside the agent package by default (agent/native/app-job/app-job.exe here)', () => {
    expect(checkAppLauncher('linux').detail).toContain(`under ${join(import.meta.dirname, '../../native/app-job/app-job.exe')} (`);
  });
});

describe('formatDoctorLines', () => {
  it('writes the verdict and the check in columns', () => {
    expect(formatDoctorLines([{ check: 'gpu', verdict: 'warn', detail: 'not found' }, { check: 'control plane', verdict: 'ok', detail: 'x' }])).toBe(
      'warn  gpu            not found\nok    control plane  x\n',
    );
  });
});
