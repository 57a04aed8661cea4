// Issue 13, item 3, with the real processes: a customer's build (the mock Unreal app, writing its
// -ABSLOG, a plugin log in Saved/Logs and, when it crashes, a crash folder) streams to a viewer
// through `pixelfleet serve` and `pixelfleet-agent run` (it prints nothing to stdout, so its
// captured output is empty: no log). The app exits while the control plane is
// down (SIGKILLed); its logs wait in the agent's spool and reach the control plane when it is back.
// And an agent SIGKILLed with a spooled log still unsent sends it after its restart.
import { readdirSync, readFileSync, rmSync, mkdtempSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startAgentProcess, type FleetProcess, type ServeProcess } from '../support/fleet-processes';
import { restartServe, serveMockAppBuild, startStreamingFleet } from '../support/streaming-fleet';
import { DEFAULT_PROJECT } from '../support/build-zips';
import { WeriftViewer } from '../support/werift-viewer';
import { logFilesInDatabaseFile } from '../support/seed';

let build: Awaited<ReturnType<typeof serveMockAppBuild>>;
const dirs: string[] = [];
const PLUGIN_LOG = 'PixelStreamingPlugin.log';

beforeAll(async () => {
  build = await serveMockAppBuild({ appArgs: ['-MockCrashReport', `-MockSavedLog=${PLUGIN_LOG}`] });
});

afterAll(async () => {
  await build.close();
});

afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

/** The session's log file records in the control plane's database, by file name (read beside the running process: WAL). */
const logRows = (dir: string, sessionId: string) =>
  logFilesInDatabaseFile(join(dir, 'cp', 'pixelfleet.sqlite'), sessionId).sort((a, b) => (a.fileName < b.fileName ? -1 : a.fileName > b.fileName ? 1 : 0));

/** A stored log's gzip bytes, from the control plane's blob folder. */
const blobOf = (dir: string, sha256: string): Buffer => readFileSync(join(dir, 'cp', 'blobs', 'sha256', sha256.slice(0, 2), sha256));

/** The pid of the app the agent runs for a session, from its app record. */
function appPid(dir: string, sessionId: string): number {
  const apps = join(dir, 'agent', 'apps');
  for (const name of readdirSync(apps).filter((n) => n.endsWith('.json'))) {
    const record = JSON.parse(readFileSync(join(apps, name), 'utf8')) as { sessionId: string; process?: { pid: number } };
    if (record.sessionId === sessionId && record.process) return record.process.pid;
  }
  throw new Error(`no app record for ${sessionId}`);
}

/** The build's Saved folder on the agent (one build in the cache). */
function savedDir(dir: string): string {
  const builds = join(dir, 'agent', 'builds');
  const uploadId = readdirSync(builds).find((n) => n.startsWith('upl_') && !n.includes('.'))!;
  return join(builds, uploadId, DEFAULT_PROJECT, 'Saved');
}

/** Sessions waiting in the agent's spool. */
function spooled(dir: string): { sessionId: string; files: { fileName: string }[] }[] {
  const spool = join(dir, 'agent', 'log-spool');
  if (!existsSync(spool)) return [];
  return readdirSync(spool)
    .filter((n) => !n.startsWith('.'))
    .map((n) => JSON.parse(readFileSync(join(spool, n, 'manifest.json'), 'utf8')) as { sessionId: string; files: { fileName: string }[] });
}

async function streamingFleet(): Promise<{ dir: string; cp: ServeProcess; agent: FleetProcess; viewer: WeriftViewer }> {
  const dir = mkdtempSync(join(tmpdir(), 'pf-session-logs-'));
  dirs.push(dir);
  const { cp, agent, wsUrl } = await startStreamingFleet({ dir, buildUrl: build.buildUrl, agentLogLevel: 'debug' });
  const viewer = await WeriftViewer.join(wsUrl);
  await viewer.until(() => viewer.rtpPackets > 30, 60_000);
  return { dir, cp, agent, viewer };
}

describe('engine logs survive a control plane outage and an agent restart', () => {
  it('the app crashes while the control plane is down: its engine log, plugin log and crash zip are spooled and uploaded once it is back', { timeout: 150_000 }, async () => {
    const { dir, cp, agent, viewer } = await streamingFleet();
    const sessionId = viewer.sessionId;
    cp.child.kill('SIGKILL');
    await cp.exited;

    process.kill(appPid(dir, sessionId), 'SIGUSR2'); // the app crashes now, with its crash folder
    await agent.output(/session logs spooled/, 30_000);
    await agent.output(/session log upload failed; it stays spooled and is retried/, 30_000);
    const [entry] = spooled(dir);
    expect(entry?.sessionId).toBe(sessionId);
    const crashFolders = readdirSync(join(savedDir(dir), 'Crashes'));
    expect(crashFolders).toHaveLength(1);
    const crashZip = `Crash-${crashFolders[0]}.zip`;
    // The app printed nothing to stdout/stderr (no -stdout): an empty capture is no log.
    expect(entry!.files.map((f) => f.fileName).sort()).toEqual([`${DEFAULT_PROJECT}.log`, crashZip, PLUGIN_LOG].sort());
    await viewer.pc.close();

    await restartServe(dir, cp);
    await expect.poll(() => logRows(dir, sessionId).length, { timeout: 60_000, interval: 250 }).toBe(3);
    await expect.poll(() => spooled(dir), { timeout: 10_000 }).toEqual([]);

    const rows = new Map(logRows(dir, sessionId).map((r) => [r.fileName, r]));
    const contentOf = (name: string): Buffer => {
      const row = rows.get(name)!;
      const gz = blobOf(dir, row.blobSha256);
      const bytes = gunzipSync(gz);
      expect(row.gzSize).toBe(gz.length);
      expect(row.fileSize).toBe(bytes.length);
      return bytes;
    };
    const engineLog = contentOf(`${DEFAULT_PROJECT}.log`).toString();
    expect(engineLog).toContain(`Running engine for game: ${DEFAULT_PROJECT}`);
    expect(engineLog).toContain('Fatal error: simulated crash (SIGUSR2)');
    expect(contentOf(PLUGIN_LOG)).toEqual(readFileSync(join(savedDir(dir), 'Logs', PLUGIN_LOG)));
    const zip = contentOf(crashZip);
    expect(zip.subarray(0, 4)).toEqual(Buffer.from([0x50, 0x4b, 0x03, 0x04]));
    for (const name of readdirSync(join(savedDir(dir), 'Crashes', crashFolders[0]!))) {
      expect(zip.includes(Buffer.from(`${crashFolders[0]}/${name}`)), name).toBe(true); // named in the central directory
    }
    // The session folder's own files moved into the spool and are gone with it.
    expect(existsSync(join(dir, 'agent', 'sessions', sessionId))).toBe(false);
  });

  it('an agent SIGKILLed with a spooled log not yet sent sends it after its restart', { timeout: 150_000 }, async () => {
    const { dir, cp, agent, viewer } = await streamingFleet();
    const sessionId = viewer.sessionId;
    cp.child.kill('SIGKILL');
    await cp.exited;
    process.kill(appPid(dir, sessionId), 'SIGTERM'); // a clean exit this time: no crash folder
    await agent.output(/session log upload failed; it stays spooled and is retried/, 30_000);
    expect(spooled(dir).map((e) => e.sessionId)).toEqual([sessionId]);
    await agent.kill();
    await viewer.pc.close();

    const again = await restartServe(dir, cp);
    expect(logRows(dir, sessionId)).toEqual([]); // the agent that spooled it is gone

    const restarted = await startAgentProcess({ grpcAddress: again.grpcAddress, dataDir: join(dir, 'agent'), configDir: dir, hostname: 'gpu-fleet', logLevel: 'debug' });
    await expect.poll(() => logRows(dir, sessionId).map((r) => r.fileName), { timeout: 30_000, interval: 250 }).toEqual([`${DEFAULT_PROJECT}.log`, PLUGIN_LOG]);
    const engine = logRows(dir, sessionId).find((r) => r.fileName === `${DEFAULT_PROJECT}.log`)!;
    expect(gunzipSync(blobOf(dir, engine.blobSha256)).toString()).toContain('LogExit: Exiting.');
    expect(spooled(dir)).toEqual([]);
    expect(restarted.text()).toContain('session log uploaded');
  });
});
