// A real S3-compatible server for tests: OpenStack Swift (Debian bookworm's `swift-proxy`,
// `swift-object`, `swift-container`, `swift-account`: 2.30) with its `s3api` middleware and
// `tempauth`, all four servers started as child processes on free ports of 127.0.0.1 with their
// rings, configs and one storage device in a temp folder. s3api speaks SigV4 (headers and
// presigned query strings), Range GET, multipart upload (ListMultipartUploads, ListParts, Abort),
// ListObjectsV2, DeleteObject(s) and Content-MD5 checks. What it does not: the SDK's newer
// flexible checksums (x-amz-checksum-*: the store asks for them only where S3 requires them) and
// If-Range (it serves the range whatever the validator; our objects never change under a key).
// Why Swift: MinIO, Garage and SeaweedFS are not packaged for Debian, and Ceph's radosgw needs a
// monitor and an OSD beside it (a cluster per test file); Swift is four Python daemons.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';

/** The Debian packages CI installs (.ci/run): `apt-get install --no-install-recommends <these>`. */
export const SWIFT_PACKAGES = ['swift-proxy', 'swift-object', 'swift-container', 'swift-account'];

const SERVERS = ['account', 'container', 'object'] as const;
/** tempauth's account `pixelfleet`, user `tests`: the S3 access key is `account:user`. */
const ACCESS_KEY = 'pixelfleet:tests';
const SECRET_KEY = 'swift-s3api-test-secret-0123456789';

export interface S3TestServer {
  /** `http://127.0.0.1:<port>` (path-style requests). */
  endpoint: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  /** `blobs.s3` for the control plane's config, with a new bucket (prefix optional). */
  blobsConfig(bucket: string, extra?: Record<string, unknown>): Record<string, unknown>;
  /** A client with the test credentials (checksums only where S3 requires them, as the store's). */
  client(): S3Client;
  /** Creates a bucket and returns its name. */
  createBucket(name?: string): Promise<string>;
  /** Stops the four servers (SIGTERM, then SIGKILL) and removes the folder. */
  stop(): Promise<void>;
}

let buckets = 0;

/** Starts Swift; throws with the install line when the packages are missing. */
export async function startS3Server(): Promise<S3TestServer> {
  if (spawnSync('swift-proxy-server', ['--help'], { stdio: 'ignore' }).error !== undefined) {
    throw new Error(`OpenStack Swift is not installed: apt-get install --no-install-recommends ${SWIFT_PACKAGES.join(' ')}`);
  }
  const dir = mkdtempSync(join(tmpdir(), 'pf-swift-'));
  mkdirSync(join(dir, 'srv', 'd1'), { recursive: true });
  const ports = { proxy: await freePort(), account: await freePort(), container: await freePort(), object: await freePort() };
  for (const kind of SERVERS) {
    const builder = join(dir, `${kind}.builder`);
    ringBuilder(builder, 'create', '6', '1', '1');
    ringBuilder(builder, 'add', `r1z1-127.0.0.1:${ports[kind]}/d1`, '100');
    ringBuilder(builder, 'rebalance');
    writeFileSync(join(dir, `${kind}-server.conf`), serverConf(dir, kind, ports[kind]));
  }
  writeFileSync(join(dir, 'proxy-server.conf'), proxyConf(dir, ports.proxy));
  const children: { name: string; child: ChildProcess; output: string[] }[] = [];
  const stop = async () => {
    await Promise.all(children.map(({ child }) => stopChild(child)));
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const name of [...SERVERS, 'proxy'] as const) {
      const child = spawn(`swift-${name}-server`, [join(dir, `${name}-server.conf`), '--verbose'], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
      const output: string[] = [];
      const keep = (chunk: Buffer) => {
        output.push(chunk.toString('utf8'));
        if (output.length > 200) output.shift();
      };
      child.stdout?.on('data', keep);
      child.stderr?.on('data', keep);
      children.push({ name, child, output });
    }
    const endpoint = `http://127.0.0.1:${ports.proxy}`;
    const client = () =>
      new S3Client({
        endpoint,
        region: 'us-east-1',
        forcePathStyle: true,
        credentials: { accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY },
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      });
    await waitUntilReady(endpoint, [ports.account, ports.container, ports.object], children);
    return {
      endpoint,
      region: 'us-east-1',
      accessKeyId: ACCESS_KEY,
      secretAccessKey: SECRET_KEY,
      client,
      blobsConfig: (bucket, extra = {}) => ({ s3: { endpoint, bucket, region: 'us-east-1', accessKeyId: ACCESS_KEY, secretAccessKey: SECRET_KEY, forcePathStyle: true, ...extra } }),
      async createBucket(name) {
        buckets += 1;
        const bucket = name ?? `pf-test-${process.pid}-${buckets}`;
        const c = client();
        try {
          await c.send(new CreateBucketCommand({ Bucket: bucket }));
        } finally {
          c.destroy();
        }
        return bucket;
      },
      stop,
    };
  } catch (err) {
    const logs = children.map(({ name, child, output }) => `--- swift-${name}-server (exit ${child.exitCode ?? 'running'}):\n${output.join('').slice(-2000)}`).join('\n');
    await stop();
    throw new Error(`Swift did not start: ${(err as Error).message}\n${logs}`);
  }
}

function ringBuilder(...args: string[]): void {
  const r = spawnSync('swift-ring-builder', args, { encoding: 'utf8' });
  // rebalance exits 1 with a warning on a one-device ring it still builds; only 2 is an error.
  if (r.error !== undefined || (r.status ?? 2) >= 2) throw new Error(`swift-ring-builder ${args.join(' ')} failed: ${r.stderr}${r.stdout}`);
}

/** A storage server: one device folder, no mount check (a temp folder is no mount point), no fallocate reserve. */
function serverConf(dir: string, kind: (typeof SERVERS)[number], port: number): string {
  return `[DEFAULT]
bind_ip = 127.0.0.1
bind_port = ${port}
workers = 0
devices = ${join(dir, 'srv')}
mount_check = false
disable_fallocate = true
swift_dir = ${dir}
log_level = WARNING

[pipeline:main]
pipeline = ${kind}-server

[app:${kind}-server]
use = egg:swift#${kind}
`;
}

/** The proxy with s3api before tempauth (the order s3api's docs give), and slo/copy for multipart and copies. */
function proxyConf(dir: string, port: number): string {
  return `[DEFAULT]
bind_ip = 127.0.0.1
bind_port = ${port}
workers = 0
swift_dir = ${dir}
log_level = WARNING

[pipeline:main]
pipeline = catch_errors gatekeeper healthcheck proxy-logging cache listing_formats s3api tempauth copy slo dlo proxy-logging proxy-server

[app:proxy-server]
use = egg:swift#proxy
account_autocreate = true

[filter:tempauth]
use = egg:swift#tempauth
user_pixelfleet_tests = ${SECRET_KEY} .admin

[filter:s3api]
use = egg:swift#s3api
location = us-east-1

[filter:catch_errors]
use = egg:swift#catch_errors
[filter:gatekeeper]
use = egg:swift#gatekeeper
[filter:healthcheck]
use = egg:swift#healthcheck
[filter:proxy-logging]
use = egg:swift#proxy_logging
[filter:cache]
use = egg:swift#memcache
[filter:listing_formats]
use = egg:swift#listing_formats
[filter:copy]
use = egg:swift#copy
[filter:slo]
use = egg:swift#slo
[filter:dlo]
use = egg:swift#dlo
`;
}

async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  server.close();
  await once(server, 'close');
  return port;
}

/** Polls each storage server's port and the proxy's healthcheck until all answer (20 s at most). */
async function waitUntilReady(endpoint: string, storagePorts: number[], children: { name: string; child: ChildProcess }[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const dead = children.find(({ child }) => child.exitCode !== null || child.signalCode !== null);
    if (dead !== undefined) throw new Error(`swift-${dead.name}-server exited`);
    try {
      if ((await Promise.all(storagePorts.map(accepts))).every(Boolean)) {
        const res = await fetch(`${endpoint}/healthcheck`);
        if (res.ok && (await res.text()) === 'OK') return;
      }
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error('no answer from the proxy in 20 s');
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Whether something accepts a TCP connection on 127.0.0.1:port. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
  await exited;
  clearTimeout(timer);
}
