// Doctor's checks of the worker itself: free disk for the data dir and the build cache, the app-job
// launcher Windows apps run under, the GPU (nvidia-smi when it is there), and whether the relay's
// UDP port range can be bound.
import { createSocket } from 'node:dgram';
import { existsSync, statfsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { execa } from 'execa';
import { formatBytes } from '@pixelfleet/build-archive';
import { APP_JOB_EXE } from '../launcher/app-job';
import type { DoctorLine } from './doctor-line';

/** Below this much free space in the data dir, doctor fails (default 1 GiB: a session's logs and a small build). */
export const MIN_FREE_BYTES = 1024 ** 3;
/** Below this much, doctor warns (default 20 GiB: one packaged Unreal build, extracted). */
export const LOW_FREE_BYTES = 20 * 1024 ** 3;

/** Free bytes for an unprivileged writer on the disk of path, or of its nearest existing parent (the data dir may not exist yet). */
export function freeBytes(path: string): number {
  let p = path;
  while (!existsSync(p) && dirname(p) !== p) p = dirname(p);
  const s = statfsSync(p);
  return s.bavail * s.bsize;
}

export function checkDataDisk(dataDir: string, limits: { minFreeBytes?: number; lowFreeBytes?: number } = {}): DoctorLine {
  const min = limits.minFreeBytes ?? MIN_FREE_BYTES;
  const low = limits.lowFreeBytes ?? LOW_FREE_BYTES;
  const free = freeBytes(dataDir);
  const detail = `${formatBytes(free)} free in ${dataDir}`;
  if (free < min) return { check: 'disk', verdict: 'fail', detail: `${detail}, below ${formatBytes(min)}: sessions and builds will fail` };
  if (free < low) return { check: 'disk', verdict: 'warn', detail: `${detail}, below ${formatBytes(low)}` };
  return { check: 'disk', verdict: 'ok', detail };
}

/** The build cache evicts only past buildCache.maxBytes, so the disk should hold that much. */
export function checkBuildCacheDisk(buildsDir: string, maxBytes: number): DoctorLine {
  const free = freeBytes(buildsDir);
  const detail = `${formatBytes(free)} free in ${buildsDir}, buildCache.maxBytes ${formatBytes(maxBytes)}`;
  if (free < maxBytes) return { check: 'build cache', verdict: 'warn', detail: `${detail}: the disk fills before eviction starts; lower buildCache.maxBytes` };
  return { check: 'build cache', verdict: 'ok', detail };
}

/**
 * The app-job launcher (default APP_JOB_EXE: `native/app-job/app-job.exe` beside the bundle, as the
 * zip lays it out). On Windows every app runs under it, so without it no session can start
 * (NO_APP_JOB). Elsewhere apps run directly; the line still names the path a Windows agent would use.
 */
export function checkAppLauncher(platform: NodeJS.Platform = process.platform, path: string = APP_JOB_EXE): DoctorLine {
  const present = statSync(path, { throwIfNoEntry: false })?.isFile() ?? false;
  if (platform !== 'win32') {
    return { check: 'app launcher', verdict: 'ok', detail: `not needed on ${platform} (apps run directly); a Windows agent would run them under ${path} (${present ? 'present' : 'not there'})` };
  }
  if (present) return { check: 'app launcher', verdict: 'ok', detail: path };
  return { check: 'app launcher', verdict: 'fail', detail: `${path} is missing: every session will be refused (NO_APP_JOB); extract the whole agent zip into the install folder` };
}

/** Lists the GPUs nvidia-smi sees; its absence is a warning (the relay runs, the app may not encode). */
export async function checkGpu(nvidiaSmi = 'nvidia-smi'): Promise<DoctorLine> {
  const r = await execa(nvidiaSmi, ['--query-gpu=name,driver_version,memory.total', '--format=csv,noheader'], { reject: false, timeout: 15_000, windowsHide: true });
  if ((r as { code?: string }).code === 'ENOENT') return { check: 'gpu', verdict: 'warn', detail: `not found (no ${nvidiaSmi} on PATH); Pixel Streaming needs a GPU encoder` };
  const firstLine = (text: string) => text.trim().split(/\r?\n/)[0] ?? '';
  if (r.exitCode !== 0) return { check: 'gpu', verdict: 'fail', detail: `${nvidiaSmi} failed (exit ${r.exitCode ?? r.signal}): ${firstLine(r.stdout || r.stderr) || r.message}` };
  const gpus = r.stdout.trim().split(/\r?\n/).filter((l) => l.trim() !== '');
  if (gpus.length === 0) return { check: 'gpu', verdict: 'fail', detail: `${nvidiaSmi} lists no GPU` };
  return { check: 'gpu', verdict: 'ok', detail: gpus.map((g) => g.split(',').map((f) => f.trim()).join(', ')).join('; ') };
}

function bindUdp(port: number): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = createSocket('udp4');
    socket.once('error', (err: NodeJS.ErrnoException) => {
      socket.close();
      resolve(err.code ?? err.message);
    });
    socket.bind(port, () => socket.close(() => resolve(undefined)));
  });
}

/**
 * Binds the first, middle and last port of ice.portRange (each released at once): all bound is
 * ok, some is a warning (those ports are taken), none fails.
 */
export async function checkUdpPorts(range: { min: number; max: number } | undefined): Promise<DoctorLine> {
  if (range === undefined) {
    return { check: 'udp ports', verdict: 'warn', detail: 'ice.portRange is not set: the relay takes any UDP port, so a firewall cannot open just a range' };
  }
  const samples = [...new Set([range.min, Math.floor((range.min + range.max) / 2), range.max])];
  const failures: string[] = [];
  for (const port of samples) {
    const err = await bindUdp(port);
    if (err !== undefined) failures.push(`${port} (${err})`);
  }
  const span = `${range.min}-${range.max} (${range.max - range.min + 1} ports)`;
  if (failures.length === 0) return { check: 'udp ports', verdict: 'ok', detail: `${span}: bound ${samples.join(', ')}; open this range for UDP in the firewall` };
  const verdict = failures.length === samples.length ? 'fail' : 'warn';
  return { check: 'udp ports', verdict, detail: `${span}: cannot bind ${failures.join(', ')}` };
}
