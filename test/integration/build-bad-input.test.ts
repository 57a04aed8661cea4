// Bad input the build pipeline must end cleanly, on a real `pixelfleet serve` process: a fileUrl
// that redirects to a private address under the production URL policy, and a disk that fills
// during the download (and one too small to extract the build). Each build ends with its
// objection, the webhook sequence seen by a real receiver is exact, nothing is left in the
// pipeline's work dir, and the control plane keeps serving.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { writeBuildZip } from '../support/build-zips';
import { callApi, createAccount, killAll, startServe, type ProcessAccount, type ServeProcess } from '../support/fleet-processes';
import { listen, sendZip, type TestServer } from '../support/local-server';
import { WebhookReceiver } from '../support/webhook-receiver';

const MIB = 1024 * 1024;

let files: string;
const receiver = new WebhookReceiver();
const dirs: string[] = [];

beforeAll(async () => {
  files = mkdtempSync(join(tmpdir(), 'pf-bad-input-files-'));
  await writeBuildZip(files, 'linux', { fileName: 'linux.zip' });
  await writeBuildZip(files, 'linux', { fileName: 'big.zip', pakBytes: 5 * MIB });
});

afterAll(() => {
  rmSync(files, { recursive: true, force: true });
});

afterEach(async () => {
  await killAll();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function tempDir(): string {
  const d = mkdtempSync(join(tmpdir(), 'pf-bad-input-'));
  dirs.push(d);
  return d;
}

/** Serves the files folder (whole files only) and the receiver's `/hook`. */
function serveFiles(req: IncomingMessage, res: ServerResponse): void {
  if (receiver.handle(req, res)) return;
  const file = join(files, decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname).slice(1));
  if (!existsSync(file)) return void res.writeHead(404).end();
  sendZip(req, res, file);
}

async function accountWithHook(cp: ServeProcess, email: string, hookOrigin: string): Promise<ProcessAccount> {
  const a = await createAccount(cp.grpcAddress, email);
  const res = await callApi(cp.httpOrigin, 'PATCH', `/projects/${a.projectId}/settings`, { apiKey: a.apiKey, userId: a.userId, webhookUrl: `${hookOrigin}/hook` });
  expect(res.status).toBe(200);
  return a;
}

async function upload(cp: ServeProcess, a: ProcessAccount, fileUrl: string): Promise<string> {
  const res = await callApi(cp.httpOrigin, 'POST', '/projects/upload-file', { apiKey: a.apiKey, userId: a.userId, projectId: a.projectId, fileUrl, autoRelease: true });
  expect(res.status).toBe(201);
  return (res.body as { uploadId: string }).uploadId;
}

/** The project's builds as the public API lists them: the control plane still answers. */
async function listed(cp: ServeProcess, a: ProcessAccount): Promise<{ uploadId: string; status: string; objection: string | null }[]> {
  const res = await callApi(cp.httpOrigin, 'GET', `/projects/${a.projectId}/builds?userId=${a.userId}&apikey=${a.apiKey}`);
  expect(res.status).toBe(200);
  return (res.body as { builds: { uploadId: string; status: string; objection: string | null }[] }).builds;
}

const REFUSED_ADDRESS = 'must point to a public address (private, loopback and link-local addresses are refused)';

/**
 * The production policy (allowPrivateUrls false) takes only https to public addresses. The tests
 * run in a network namespace of their own (test/run-isolated.mjs), where an address outside every
 * refused range is added to loopback to stand for a public file host; its certificate (made here
 * with openssl) is trusted by the serve process through NODE_EXTRA_CA_CERTS. Outside such a
 * namespace the test would have to change the machine's network, so it does not run there.
 */
const PUBLIC_ADDRESS = '93.184.216.7';
const isolated = process.env.PIXELFLEET_NETNS === '1';

describe('a fileUrl that redirects to a private address', () => {
  let publicHost: TestServer;
  let loopbackHost: TestServer;
  let certFile: string;
  const seen: string[] = [];

  beforeAll(async () => {
    if (!isolated) return;
    const add = spawnSync('ip', ['addr', 'replace', `${PUBLIC_ADDRESS}/32`, 'dev', 'lo'], { encoding: 'utf8' });
    if (add.status !== 0) throw new Error(`ip addr replace failed: ${add.stderr}`);
    const dir = tempDir();
    certFile = join(dir, 'cert.pem');
    const keyFile = join(dir, 'key.pem');
    const made = spawnSync(
      'openssl',
      ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=pixelfleet-test', '-addext', `subjectAltName=IP:${PUBLIC_ADDRESS},IP:127.0.0.1`, '-keyout', keyFile, '-out', certFile],
      { encoding: 'utf8' },
    );
    if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
    const tls = { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8') };
    loopbackHost = await listen((req, res) => {
      seen.push(`loopback ${req.url ?? ''}`);
      serveFiles(req, res);
    }, '127.0.0.1', tls);
    publicHost = await listen((req, res) => {
      if (receiver.handle(req, res)) return;
      seen.push(`public ${req.url ?? ''}`);
      if (req.url === '/to-loopback.zip') res.writeHead(302, { location: `${loopbackHost.origin}/linux.zip` }).end();
      else if (req.url === '/to-private.zip') res.writeHead(307, { location: 'https://10.0.0.8/linux.zip' }).end();
      else res.writeHead(404).end();
    }, PUBLIC_ADDRESS, tls);
  });

  afterAll(async () => {
    if (!isolated) return;
    await publicHost.close();
    await loopbackHost.close();
    spawnSync('ip', ['addr', 'del', `${PUBLIC_ADDRESS}/32`, 'dev', 'lo']);
  });

  it.runIf(isolated)('is refused at the redirect: Download Failed naming the target, the exact webhook sequence, nothing on disk, nothing fetched from it', async () => {
    const dir = tempDir();
    const cp = await startServe({ dataDir: join(dir, 'cp'), configDir: dir, config: { network: { allowPrivateUrls: false } }, env: { NODE_EXTRA_CA_CERTS: certFile } });
    // Two accounts: one build call each in the build-call window.
    const a = await accountWithHook(cp, 'redirect-loopback@example.com', publicHost.origin);
    const b = await accountWithHook(cp, 'redirect-private@example.com', publicHost.origin);
    const toLoopback = await upload(cp, a, `${publicHost.origin}/to-loopback.zip`);
    const toPrivate = await upload(cp, b, `${publicHost.origin}/to-private.zip`);
    const failed = ['build.uploaded pending', 'build.downloading Downloading Files', 'build.rejected Download Failed'];
    for (const [uploadId, target] of [
      [toLoopback, `127.0.0.1:${loopbackHost.port}`],
      [toPrivate, '10.0.0.8'],
    ] as const) {
      const ds = await receiver.until(uploadId, 'build.rejected');
      expect(receiver.stages(uploadId)).toEqual(failed);
      expect(ds.at(-1)?.objection).toBe(`the URL redirected to ${target}, which is refused: it ${REFUSED_ADDRESS}`);
    }
    expect((await listed(cp, a))[0]).toMatchObject({ uploadId: toLoopback, status: 'Download Failed' });
    // The first hops were fetched; the refused targets never were.
    expect(seen.sort()).toEqual(['public /to-loopback.zip', 'public /to-private.zip']);
    expect(readdirSync(join(dir, 'cp', 'pipeline'))).toEqual([]);
  });
});

/**
 * A size-limited file system for the pipeline's work dir: `pixelfleet serve` runs in a mount
 * namespace of its own where `<dataDir>/pipeline` is a small tmpfs (root, as CI runs, may make
 * one; so may anyone where user namespaces are allowed, with `-r`). Nothing else of the machine
 * sees it; the test reads it through /proc/<pid>/root.
 */
function tmpfsWrapper(mountPoint: string, size: string): string[] | undefined {
  for (const flags of [['-m'], ['-r', '-m']]) {
    const probe = spawnSync('unshare', [...flags, '--propagation', 'private', '--', 'sh', '-c', 'mount -t tmpfs -o size=1m pixelfleet-probe "$0"', tmpdir()], { stdio: 'ignore' });
    if (probe.status === 0) return ['unshare', ...flags, '--propagation', 'private', '--', 'sh', '-c', `mount -t tmpfs -o size=${size} pixelfleet-test "$0" && exec "$@"`, mountPoint];
  }
  return undefined;
}

describe('a disk that fills', () => {
  it('during the download: Download Failed saying so; nothing left, and the control plane keeps serving (its scan writes nothing: extraction is the agents\' and checks their disk)', async () => {
    const dir = tempDir();
    const work = join(dir, 'cp', 'pipeline');
    mkdirSync(work, { recursive: true });
    const wrapper = tmpfsWrapper(work, '3m');
    if (wrapper === undefined) throw new Error('no mount namespace here: unshare -m and unshare -r -m both failed');
    const files = await listen(serveFiles);
    try {
      const cp = await startServe({ dataDir: join(dir, 'cp'), configDir: dir, wrapper });
      const a = await accountWithHook(cp, 'disk-download@example.com', files.origin);
      // 5 MiB into a 3 MiB file system.
      const full = await upload(cp, a, `${files.origin}/big.zip`);
      const ds = await receiver.until(full, 'build.rejected');
      expect(receiver.stages(full)).toEqual(['build.uploaded pending', 'build.downloading Downloading Files', 'build.rejected Download Failed']);
      expect(ds.at(-1)?.objection).toMatch(/^the service ran out of disk space after \d+(\.\d)? MiB of the download; please submit the build again later$/);
      // The control plane still answers, and the tmpfs it writes in is empty again.
      expect((await listed(cp, a)).map((x) => [x.status, x.objection])).toEqual([['Download Failed', ds.at(-1)?.objection]]);
      expect(readdirSync(join('/proc', String(cp.child.pid), 'root', work))).toEqual([]);
    } finally {
      await files.close();
    }
  });

  it('while saving to the repository: Reject saying so; nothing left in the work dir or the blob store', async () => {
    const dir = tempDir();
    const blobs = join(dir, 'cp', 'blobs');
    mkdirSync(blobs, { recursive: true });
    const wrapper = tmpfsWrapper(blobs, '1m');
    if (wrapper === undefined) throw new Error('no mount namespace here: unshare -m and unshare -r -m both failed');
    const files = await listen(serveFiles);
    try {
      const cp = await startServe({ dataDir: join(dir, 'cp'), configDir: dir, wrapper });
      const a = await accountWithHook(cp, 'disk-save@example.com', files.origin);
      // The 1.5 MiB archive downloads and scans on the main disk, then meets a 1 MiB repository.
      const uploadId = await upload(cp, a, `${files.origin}/linux.zip`);
      const ds = await receiver.until(uploadId, 'build.rejected');
      expect(receiver.stages(uploadId)).toEqual([
        'build.uploaded pending',
        'build.downloading Downloading Files',
        'build.extracting Extracting & Scanning',
        'build.saving Saving to Repository',
        'build.rejected Reject',
      ]);
      expect(ds.at(-1)?.objection).toBe('the service ran out of disk space while processing the build; please submit it again later');
      expect((await listed(cp, a)).map((x) => x.status)).toEqual(['Reject']);
      expect(readdirSync(join(dir, 'cp', 'pipeline'))).toEqual([]);
      const leftInBlobs = readdirSync(join('/proc', String(cp.child.pid), 'root', blobs), { recursive: true }) as string[];
      expect(leftInBlobs.filter((n) => statSync(join('/proc', String(cp.child.pid), 'root', blobs, n)).isFile())).toEqual([]);
    } finally {
      await files.close();
    }
  });
});
