// bench:churn — one client address opening viewer sessions in a loop at full speed (open the
// signalling socket, read the first message, close), against a real control plane (SQLite file,
// info-level log counted byte by byte) with a real agent link (scripted relay, one slot). Run once
// with the session rate limit off (viewers.sessionsPerMinute 0) and once with the defaults: sessions
// made, database growth (pages in use after a WAL checkpoint) and info-log growth, per session and
// per second. Figures only.
//
// npm run bench:churn -- [--attempts 3000] [--parallel 4]
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { createLogger, loadControlPlaneConfig } from '@pixelfleet/control-plane';
import { buildControlPlaneWithDb, type ControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';
import { TEST_ADMIN_TOKEN, TEST_JOIN_TOKEN } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { FakePlayer } from '../support/fake-player';
import { arg, f, until } from './bench-support';

const attempts = Number(arg('--attempts', '3000'));
const parallel = Number(arg('--parallel', '4'));

interface Phase {
  name: string;
  viewers: Record<string, number>;
}

interface PhaseFigures {
  name: string;
  seconds: number;
  attempts: number;
  sessions: number;
  refused: number;
  dbBytes: number;
  logBytes: number;
  logLines: number;
}

/** Bytes of database pages in use (after folding the WAL back in). */
function dbBytes(cp: ControlPlaneWithDb): number {
  cp.db.pragma('wal_checkpoint(TRUNCATE)');
  const pages = (cp.db.pragma('page_count', { simple: true }) as number) - (cp.db.pragma('freelist_count', { simple: true }) as number);
  return pages * (cp.db.pragma('page_size', { simple: true }) as number);
}

async function runPhase(phase: Phase): Promise<PhaseFigures> {
  const dataDir = mkdtempSync(join(tmpdir(), 'pf-bench-churn-'));
  let logBytes = 0;
  let logLines = 0;
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      logBytes += chunk.length;
      logLines += chunk.toString('utf8').split('\n').filter(Boolean).length;
      done();
    },
  });
  const config = loadControlPlaneConfig({
    overrides: {
      http: { host: '127.0.0.1', port: 0 },
      grpc: { host: '127.0.0.1', port: 0 },
      dataDir,
      adminToken: TEST_ADMIN_TOKEN,
      agentJoinToken: TEST_JOIN_TOKEN,
      viewers: phase.viewers,
      logLevel: 'info',
    },
  });
  const cp = buildControlPlaneWithDb(config, { logger: createLogger('info', sink) });
  const started = await cp.start();
  const script = new ScriptedSessions();
  const { agent } = await startTestAgent({ grpcAddress: started.grpcAddress, handlers: script.handlers, inventory: script.inventory, onSignal: script.onSignal });
  script.agent = agent;
  try {
    await linkReaches(agent, 'connected');
    const owner = await cp.accounts.createUser('churn@example.com');
    const projectId = (await cp.accounts.createProject(owner.userId, 'Churn', 'europe')).projectId;
    await cp.registerLocalBuild(projectId);
    const url = `${started.publicUrls.share.replace(/^http/, 'ws')}/${projectId}/signalling`;

    const db0 = dbBytes(cp);
    const log0 = logBytes;
    const lines0 = logLines;
    let next = 0;
    let sessions = 0;
    let refused = 0;
    const t0 = performance.now();
    const loop = async () => {
      while (next < attempts) {
        next += 1;
        const p = await FakePlayer.connect(url);
        const first = await Promise.race([p.next('pixelfleetSession'), p.closed]);
        if ('type' in first) {
          sessions += 1;
          p.close();
        } else if (first.code === 4014) {
          refused += 1;
        }
        await p.closed;
      }
    };
    await Promise.all(Array.from({ length: parallel }, loop));
    const seconds = (performance.now() - t0) / 1000;
    // Every session made has ended (its stop confirmed by the agent) before the bytes are counted.
    await until(() => (cp.sessions.list({ limit: 100_000 }).every((s) => s.status === 'Terminated') ? true : undefined), 'every session ended', 60_000);
    return { name: phase.name, seconds, attempts, sessions, refused, dbBytes: dbBytes(cp) - db0, logBytes: logBytes - log0, logLines: logLines - lines0 };
  } finally {
    await agent.close();
    await cp.close();
    rmSync(dataDir, { recursive: true, force: true });
  }
}

const phases: Phase[] = [
  { name: 'rate limit off (viewers.sessionsPerMinute 0)', viewers: { sessionsPerMinute: 0 } },
  { name: 'defaults (burst 20, 10 a minute)', viewers: {} },
];
console.log(`bench:churn — ${attempts} attempts from one address, ${parallel} at a time (open, read one message, close)\n`);
for (const phase of phases) {
  const r = await runPhase(phase);
  const per = (bytes: number) => (r.sessions > 0 ? f(bytes / r.sessions, 0) : 'n/a');
  console.log(`${r.name}`);
  console.log(`  ${r.attempts} attempts in ${f(r.seconds, 2)} s (${f(r.attempts / r.seconds, 0)}/s): ${r.sessions} sessions made (${f(r.sessions / r.seconds, 1)}/s), ${r.refused} refused with 4014`);
  console.log(`  database: +${r.dbBytes} bytes = ${per(r.dbBytes)} B/session, ${f(r.dbBytes / r.seconds / 1024, 1)} KiB/s`);
  console.log(`  info log: +${r.logBytes} bytes in ${r.logLines} lines = ${per(r.logBytes)} B/session, ${f(r.logBytes / r.seconds / 1024, 1)} KiB/s\n`);
}
