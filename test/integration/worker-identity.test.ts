// Issue 27 item 5, with the real processes: two `pixelfleet-agent run` processes (the bundle as it
// ships) present one worker identity, as a server cloned from an image that carried the agent's
// worker.json. The first keeps its stream, its worker and the session streaming on it; the second
// is refused with a message naming both hosts, and asks again only at its longest backoff, refused
// again, while heartbeats (1 s) and leases (3 s, `workers.*` shortened by config) come and go: no
// flapping. Its `doctor` says so; re-enrolling it (the documented fix) makes it a worker of its own.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { adminJson, killAll, PROCESS_JOIN_TOKEN, startBundle, type FleetProcess } from '../support/fleet-processes';
import { serveMockAppBuild, startStreamingFleet } from '../support/streaming-fleet';
import { WeriftViewer } from '../support/werift-viewer';

const SHORT = { workers: { heartbeatIntervalSeconds: 1, leaseSeconds: 3 } };
const REFUSED = 'another agent process presents this worker identity; this one waits until it stops: re-enroll one of them';

let build: Awaited<ReturnType<typeof serveMockAppBuild>>;
const dirs: string[] = [];

beforeAll(async () => {
  build = await serveMockAppBuild();
});

afterAll(async () => {
  await build.close();
});

afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

interface LogLine {
  level: number;
  msg: string;
  [field: string]: unknown;
}

/** The process's JSON log lines (pino), those with message msg when given. */
function linesOf(p: FleetProcess, msg?: string): LogLine[] {
  return p
    .text()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as LogLine)
    .filter((l) => msg === undefined || l.msg === msg);
}

/** Hellos the control plane accepted from the worker (each a new stream it took: one means no flapping). */
const acceptedHellos = (cp: FleetProcess, workerId: string) => linesOf(cp, 'worker link changed').filter((l) => l.workerId === workerId && l.event === 'hello').length;

interface WorkerRow {
  workerId: string;
  hostname: string;
  status: string;
  link: string;
}
const workers = async (grpcAddress: string) => ((await adminJson(grpcAddress, ['workers'])) as { workers: WorkerRow[] }).workers;

describe('two servers with one worker identity', () => {
  it('the first keeps its stream and its session; the second is refused naming both hosts, again at its next try, with no flapping; doctor says so; re-enrolled, it is a worker of its own', { timeout: 180_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'pf-identity-'));
    dirs.push(dir);
    const fleet = await startStreamingFleet({ dir, buildUrl: build.buildUrl, config: SHORT });
    const [worker] = await workers(fleet.cp.grpcAddress);
    const workerId = worker!.workerId;
    expect(worker).toMatchObject({ hostname: 'gpu-fleet', status: 'connected' });
    const firstInstance = linesOf(fleet.agent, 'connected to the control plane')[0]?.instanceId as string;
    expect(firstInstance).toMatch(/^[0-9a-f]{16}$/);

    // The clone: another server made from an image of the first, its data folder holding a copy of worker.json.
    const cloneData = join(dir, 'clone');
    mkdirSync(cloneData);
    copyFileSync(join(dir, 'agent', 'worker.json'), join(cloneData, 'worker.json'));
    const cloneConfig = join(dir, 'agent-gpu-clone.json');
    writeFileSync(cloneConfig, JSON.stringify({ controlPlane: fleet.cp.grpcAddress, joinToken: PROCESS_JOIN_TOKEN, region: 'europe', slots: 1, dataDir: cloneData, hostname: 'gpu-clone', logLevel: 'info' }));
    const clone = startBundle(['run', '--config', cloneConfig]);
    await clone.output(new RegExp(`"msg":"${REFUSED}"`), 30_000);

    const [refusal] = linesOf(clone, REFUSED);
    const cloneInstance = refusal!.instanceId as string;
    expect(cloneInstance).toMatch(/^[0-9a-f]{16}$/);
    expect(cloneInstance).not.toBe(firstInstance);
    expect(refusal).toMatchObject({ level: 50, workerId, code: 'ALREADY_EXISTS', retryInMs: 30_000 });
    expect(refusal!.details).toMatch(
      new RegExp(
        `^worker ${workerId} is already connected from host gpu-fleet \\(address 127\\.0\\.0\\.1:\\d+, agent instance ${firstInstance}, since \\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z\\); ` +
          `this agent on host gpu-clone \\(address 127\\.0\\.0\\.1:\\d+, agent instance ${cloneInstance}\\) presents the same identity \\(a copy of its worker\\.json\\): ` +
          're-enroll one of them \\(stop its agent, delete worker\\.json from its data folder, start it with joinToken\\)$',
      ),
    );
    // The control plane said so too (its warning is sampled: one line a minute per worker).
    expect(linesOf(fleet.cp, 'Hello refused: another agent process presents this worker identity while its stream is alive')).toEqual([
      expect.objectContaining({ workerId, connectedHost: 'gpu-fleet', connectedInstanceId: firstInstance, refusedHost: 'gpu-clone', refusedInstanceId: cloneInstance }),
    ]);

    // A command still reaches the first: a viewer's session is placed on it, its app started there, and it streams.
    const viewer = await WeriftViewer.join(fleet.wsUrl);
    await viewer.until(() => viewer.rtpPackets > 30, 60_000);
    const session = () => adminJson(fleet.cp.grpcAddress, ['sessions']).then((r) => (r as { sessions: { sessionId: string; status: string; assignedWorker: string | null }[] }).sessions.find((s) => s.sessionId === viewer.sessionId));
    expect(await session()).toMatchObject({ status: 'Running', assignedWorker: workerId });
    expect(existsSync(join(dir, 'agent', 'sessions', viewer.sessionId))).toBe(true);
    expect(existsSync(join(cloneData, 'sessions', viewer.sessionId))).toBe(false);

    // The clone asks again at its longest backoff (30 s): a heartbeat period 30 times over, a lease 10 times.
    await clone.output(new RegExp(`"msg":"${REFUSED}"[\\s\\S]*"msg":"${REFUSED}"`), 45_000);
    expect(linesOf(clone, REFUSED)).toHaveLength(2);
    expect(linesOf(clone, 'connected to the control plane')).toEqual([]);
    // Nothing flapped: one stream from the first all along, never lost; the worker connected; the video flowing.
    expect(acceptedHellos(fleet.cp, workerId)).toBe(1);
    expect(linesOf(fleet.agent, 'connected to the control plane')).toHaveLength(1);
    expect(linesOf(fleet.agent, 'control link lost; redialing')).toEqual([]);
    expect(await workers(fleet.cp.grpcAddress)).toEqual([expect.objectContaining({ workerId, hostname: 'gpu-fleet', status: 'connected', link: 'connected' })]);
    const packets = viewer.rtpPackets;
    await viewer.until(() => viewer.rtpPackets > packets + 30, 10_000);
    expect(await session()).toMatchObject({ status: 'Running', assignedWorker: workerId });

    // doctor on the clone: its token is good, and it says why the agent cannot connect.
    const doctor = startBundle(['doctor', '--config', cloneConfig]);
    await doctor.exited;
    expect(doctor.text()).toMatch(
      new RegExp(`fail +token +worker token of ${workerId} accepted, but the agent's last stream was refused at \\S+Z \\(until its next accepted one\\): worker ${workerId} is already connected from host gpu-fleet .* this agent on host gpu-clone `),
    );

    // The fix the message names: stop the clone, delete its worker.json, start it; it enrolls as a worker of its own.
    await clone.kill();
    rmSync(join(cloneData, 'worker.json'));
    const reenrolled = startBundle(['run', '--config', cloneConfig]);
    await reenrolled.output(/connected to the control plane/);
    const listed = await workers(fleet.cp.grpcAddress);
    expect(listed.map((w) => [w.hostname, w.status]).sort()).toEqual([
      ['gpu-clone', 'connected'],
      ['gpu-fleet', 'connected'],
    ]);
    expect(listed.find((w) => w.hostname === 'gpu-clone')?.workerId).not.toBe(workerId);
    expect(existsSync(join(cloneData, 'identity-refused.json'))).toBe(false);
    expect(acceptedHellos(fleet.cp, workerId)).toBe(1);
    await viewer.close();
  });
});
