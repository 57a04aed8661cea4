// Real Debian nginx and coturn for tests, each a child process with its own config, prefix and
// temp dir on loopback (never the system's service or /etc). .ci/run installs both packages;
// missing binaries fail loudly. A certificate for them is made here with the openssl CLI.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { createSocket } from 'node:dgram';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const NGINX_PATH = '/usr/sbin/nginx';
export const TURNSERVER_PATH = '/usr/bin/turnserver';
/** The reverse-proxy example the operator guide ships; the test runs this file. */
export const NGINX_EXAMPLE = resolve(__dirname, '../../deploy/nginx/pixelfleet.conf');

function need(path: string, pkg: string): void {
  if (!existsSync(path)) throw new Error(`${path} is missing: install Debian's ${pkg} (apt-get install ${pkg}); .ci/run does this`);
}

/** A free TCP (and, for TURN, UDP) port on host, as the kernel hands it out. */
export async function freePort(host = '127.0.0.1', udpToo = false): Promise<number> {
  for (;;) {
    const server = createServer();
    await new Promise<void>((done) => server.listen(0, host, done));
    const port = (server.address() as AddressInfo).port;
    await new Promise<void>((done) => server.close(() => done()));
    if (!udpToo) return port;
    const udp = createSocket('udp4');
    const free = await new Promise<boolean>((done) => {
      udp.once('error', () => done(false));
      udp.bind(port, host, () => done(true));
    });
    await new Promise<void>((done) => (free ? udp.close(() => done()) : done()));
    if (free) return port;
  }
}

/** A self-signed certificate (ECDSA P-256, 2 days) for the given IP addresses. */
export function makeCertificate(dir: string, addresses: readonly string[]): { certFile: string; keyFile: string } {
  const certFile = join(dir, 'cert.pem');
  const keyFile = join(dir, 'key.pem');
  const san = addresses.map((a) => `IP:${a}`).join(',');
  const made = spawnSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2', '-subj', '/CN=pixelfleet-test', '-addext', `subjectAltName=${san}`, '-keyout', keyFile, '-out', certFile],
    { encoding: 'utf8' },
  );
  if (made.status !== 0) throw new Error(`openssl failed: ${made.stderr}`);
  return { certFile, keyFile };
}

export interface RunningServer {
  readonly dir: string;
  /** Everything the process wrote, stdout and stderr. */
  output(): string;
  stop(): Promise<void>;
}

function run(command: string, args: readonly string[], dir: string, ready: (output: string) => boolean, what: string): Promise<RunningServer> {
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let exited = false;
  const exit = new Promise<void>((done) => child.once('exit', () => ((exited = true), done())));
  const server: RunningServer = {
    dir,
    output: () => output,
    stop: async () => {
      if (!exited) child.kill('SIGTERM');
      await exit;
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return new Promise((done, fail) => {
    const timer = setTimeout(() => fail(new Error(`${what} did not become ready in 10 s:\n${output}`)), 10_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      if (ready(output)) {
        clearTimeout(timer);
        done(server);
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      fail(new Error(`${what} exited (${code}) before it was ready:\n${output}`));
    });
  });
}

export interface NginxOptions {
  /** Where the HTTPS server listens (the viewer's side). */
  listen: { host: string; port: number };
  /** The control plane's HTTP port on 127.0.0.1. */
  upstreamPort: number;
  certFile: string;
  keyFile: string;
}

/**
 * Runs deploy/nginx/pixelfleet.conf as it ships, with only its addresses, port and certificate
 * paths replaced (the redirect server on :80 is moved to a free loopback port), inside a minimal
 * nginx.conf of its own (prefix, pid, temp paths and logs in a temp dir).
 */
export async function startNginx(options: NginxOptions): Promise<RunningServer & { origin: string }> {
  need(NGINX_PATH, 'nginx');
  const dir = mkdtempSync(join(tmpdir(), 'pf-nginx-'));
  mkdirSync(join(dir, 'logs'));
  const { host, port } = options.listen;
  const redirectPort = await freePort();
  const site = readFileSync(NGINX_EXAMPLE, 'utf8');
  const replacements: [string, string][] = [
    ['server 127.0.0.1:8080;', `server 127.0.0.1:${options.upstreamPort};`],
    ['    listen 80;\n', `    listen 127.0.0.1:${redirectPort};\n`],
    ['    listen [::]:80;\n', ''],
    ['    listen 443 ssl http2;\n', `    listen ${host}:${port} ssl http2;\n`],
    ['    listen [::]:443 ssl http2;\n', ''],
    ['/etc/letsencrypt/live/stream.example.com/fullchain.pem', options.certFile],
    ['/etc/letsencrypt/live/stream.example.com/privkey.pem', options.keyFile],
  ];
  let text = site;
  for (const [from, to] of replacements) {
    if (!text.includes(from)) throw new Error(`deploy/nginx/pixelfleet.conf no longer contains ${JSON.stringify(from)}: update the test`);
    text = text.replace(from, to);
  }
  writeFileSync(join(dir, 'pixelfleet.conf'), text);
  const temp = (name: string) => `${name} ${join(dir, name.replace(/_path$/, ''))};`;
  writeFileSync(
    join(dir, 'nginx.conf'),
    [
      'worker_processes 1;',
      `pid ${join(dir, 'nginx.pid')};`,
      // Errors to stderr (the test's output()); 'notice' prints the event method once the sockets are bound.
      'error_log stderr notice;',
      'events { worker_connections 256; }',
      'http {',
      `  access_log ${join(dir, 'logs/access.log')};`,
      `  ${temp('client_body_temp_path')} ${temp('proxy_temp_path')} ${temp('fastcgi_temp_path')} ${temp('uwsgi_temp_path')} ${temp('scgi_temp_path')}`,
      `  include ${join(dir, 'pixelfleet.conf')};`,
      '}',
      '',
    ].join('\n'),
  );
  const test = spawnSync(NGINX_PATH, ['-p', dir, '-e', 'stderr', '-c', join(dir, 'nginx.conf'), '-t'], { encoding: 'utf8' });
  if (test.status !== 0) throw new Error(`nginx -t refused the config:\n${test.stderr}`);
  // Foreground, one process, as the current user: a test's child, not a daemon.
  const server = await run(
    NGINX_PATH,
    ['-p', dir, '-e', 'stderr', '-c', join(dir, 'nginx.conf'), '-g', 'daemon off; master_process off;'],
    dir,
    (out) => out.includes('event method'),
    'nginx',
  );
  return { ...server, origin: `https://${host}:${port}` };
}

export interface CoturnOptions {
  secret: string;
  realm: string;
  /**
   * The test's one exception to the shipped config: the agent under test is on 127.0.0.1, which
   * production denies as a peer. false runs the shipped denials as they are.
   */
  allowLoopbackPeers: boolean;
  /** TURN over TLS on a free port of its own (`tlsPort`), with the config's cert= and pkey= pointing at these files. */
  tls?: { certFile: string; keyFile: string };
}

/** The coturn config the operator guide ships; the test runs this file. */
export const COTURN_EXAMPLE = resolve(__dirname, '../../deploy/coturn/turnserver.conf');

/**
 * Runs deploy/coturn/turnserver.conf as it ships (use-auth-secret, quotas, denied peer ranges),
 * with only what a loopback test needs changed: listener and relay on 127.0.0.1 at a free port,
 * no TLS listener unless options.tls gives a certificate, logs to stdout, its files in a temp dir, and (with
 * allowLoopbackPeers) loopback peers allowed instead of denied.
 */
export async function startCoturn(options: CoturnOptions): Promise<RunningServer & { port: number; url: string; tlsPort?: number; pidFile: string }> {
  need(TURNSERVER_PATH, 'coturn');
  const dir = mkdtempSync(join(tmpdir(), 'pf-coturn-'));
  const port = await freePort('127.0.0.1', true);
  const tlsPort = options.tls ? await freePort('127.0.0.1', true) : undefined;
  const pidFile = join(dir, 'turnserver.pid');
  const replacements: [string, string][] = [
    ['static-auth-secret=CHANGE-ME-openssl-rand-hex-32\n', `static-auth-secret=${options.secret}\n`],
    ['realm=turn.example.com\n', `realm=${options.realm}\n`],
    ['listening-port=3478\n', `listening-ip=127.0.0.1\nrelay-ip=127.0.0.1\nlistening-port=${port}\n`],
    ['tls-listening-port=5349\n', options.tls ? `tls-listening-port=${tlsPort}\n` : 'no-tls\nno-dtls\n'],
    ['cert=/etc/coturn/fullchain.pem\n', options.tls ? `cert=${options.tls.certFile}\n` : ''],
    ['pkey=/etc/coturn/privkey.pem\n', options.tls ? `pkey=${options.tls.keyFile}\n` : ''],
    ['log-file=syslog\n', `log-file=stdout\nverbose\npidfile=${pidFile}\nuserdb=${join(dir, 'turndb')}\n`],
  ];
  if (options.allowLoopbackPeers) {
    replacements.push(['denied-peer-ip=127.0.0.0-127.255.255.255\n', 'allow-loopback-peers\n'], ['denied-peer-ip=::1\n', '']);
  }
  let text = readFileSync(COTURN_EXAMPLE, 'utf8');
  for (const [from, to] of replacements) {
    if (!text.includes(from)) throw new Error(`deploy/coturn/turnserver.conf no longer contains ${JSON.stringify(from)}: update the test`);
    text = text.replace(from, to);
  }
  const conf = join(dir, 'turnserver.conf');
  writeFileSync(conf, text);
  const server = await run(TURNSERVER_PATH, ['-c', conf], dir, (out) => out.includes('Total General servers') && out.includes('DB connection success'), 'coturn');
  return { ...server, port, url: `turn:127.0.0.1:${port}?transport=udp`, pidFile, ...(tlsPort === undefined ? {} : { tlsPort }) };
}
