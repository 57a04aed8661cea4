// `pixelfleet serve` on a port another process holds: one line on stderr naming the config key,
// exit code 69 (EX_UNAVAILABLE), no stack; for the HTTP and the gRPC listener alike.
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanEnv, PIXELFLEET_BIN, startCli } from '../support/cli-process';

const children: ChildProcessWithoutNullStreams[] = [];
const servers: Server[] = [];
const dirs: string[] = [];
afterEach(() => {
  for (const c of children.splice(0)) if (c.exitCode === null) c.kill('SIGKILL');
  for (const s of servers.splice(0)) s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function takenPort(): Promise<number> {
  const server = createServer();
  servers.push(server);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return (server.address() as { port: number }).port;
}

async function serveWith(ports: { http: number; grpc: number }) {
  const dir = mkdtempSync(join(tmpdir(), 'pf-listen-'));
  dirs.push(dir);
  const config = join(dir, 'cp.json');
  writeFileSync(
    config,
    JSON.stringify({ adminToken: 'listen-admin-token-0123456789abcdef', agentJoinToken: 'listen-join-token-0123456789abcdef', dataDir: join(dir, 'data'), geoip: { enabled: false }, http: { port: ports.http }, grpc: { port: ports.grpc } }),
  );
  const p = startCli(PIXELFLEET_BIN, ['serve', '--config', config], cleanEnv());
  children.push(p.child);
  const code = await p.exited;
  return { code, stderr: p.stderr() };
}

describe('a listener port already in use', () => {
  it('http.port: one line naming the key, exit 69', async () => {
    const port = await takenPort();
    const { code, stderr } = await serveWith({ http: port, grpc: 0 });
    expect(code).toBe(69);
    expect(stderr).toBe(`pixelfleet: refusing to start: cannot listen on 127.0.0.1:${port} (config key "http.port"): the address is already in use (another process listens there)\n`);
  });

  it('grpc.port: one line naming the key, exit 69', async () => {
    const port = await takenPort();
    const { code, stderr } = await serveWith({ http: 0, grpc: port });
    expect(code).toBe(69);
    expect(stderr).toBe(`pixelfleet: refusing to start: cannot listen on 127.0.0.1:${port} (config key "grpc.port"): the address is already in use (another process listens there)\n`);
  });
});
