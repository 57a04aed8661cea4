// Benchmark (not a test): CPU and memory of the mock Unreal app while it streams to N werift
// players, from /proc deltas of the child process. Prints figures; asserts nothing.
// Run: tsx test/mock-unreal/bench.ts [players=1] [seconds=10]
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnMockUnreal, unrealCommandLine } from './mock-unreal-process';
import { SignallingStub } from './signalling-stub';
import { WeriftPlayer } from './werift-player';

const CLOCK_TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux

function cpuTicks(pid: number): number {
  // Fields after the command's closing parenthesis: state is field 3, utime 14, stime 15.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return Number(fields[11]) + Number(fields[12]);
}

function rssMb(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, 'utf8').split('\n').find((l) => l.startsWith('VmRSS:'));
  return Number(line?.split(/\s+/)[1] ?? 0) / 1024;
}

const players = Number(process.argv[2] ?? 1);
const seconds = Number(process.argv[3] ?? 10);
const workDir = mkdtempSync(join(tmpdir(), 'mock-unreal-bench-'));
const stub = await SignallingStub.start();
const app = spawnMockUnreal(unrealCommandLine({ signallingUrl: stub.url, logPath: join(workDir, 'Bench.log') }));
const pid = app.child.pid;
if (pid === undefined) throw new Error('spawn failed');
await app.waitForLine('Streamer identified as');
const clients = Array.from({ length: players }, (_, i) => new WeriftPlayer(`Player${i}`, stub));
for (const client of clients) client.connect();
await Promise.all(clients.map((c) => c.waitUntil(() => c.rtp.length > 0, 'video')));
await new Promise((resolve) => setTimeout(resolve, 2000)); // settle after the DTLS handshakes

const ticks0 = cpuTicks(pid);
const packets0 = clients.reduce((sum, c) => sum + c.rtp.length, 0);
const started = performance.now();
const ownCpu0 = process.cpuUsage();
await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
const elapsed = (performance.now() - started) / 1000;
const appCpu = ((cpuTicks(pid) - ticks0) / CLOCK_TICKS_PER_SECOND / elapsed) * 100;
const ownCpu = process.cpuUsage(ownCpu0);
const packets = clients.reduce((sum, c) => sum + c.rtp.length, 0) - packets0;

console.log(`players=${players} window=${elapsed.toFixed(1)}s`);
console.log(`mock-unreal CPU: ${appCpu.toFixed(1)}% of one core, RSS ${rssMb(pid).toFixed(0)} MB`);
console.log(`RTP received by players: ${(packets / elapsed).toFixed(0)} pkt/s in total`);
console.log(`players (this process) CPU: ${(((ownCpu.user + ownCpu.system) / 1e6 / elapsed) * 100).toFixed(1)}% of one core`);

app.child.kill('SIGTERM');
await app.exited;
await Promise.all(clients.map((c) => c.close()));
await stub.close();
rmSync(workDir, { recursive: true, force: true });
