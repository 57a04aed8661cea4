// The agent logs through the same root logger as the control plane (signaling's createLogger):
// no secret it may hold (its worker token, the join token, a key it was handed) reaches a line.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { buildAgent } from './agent';
import { loadAgentConfig } from './config';

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

describe("the agent's own logger", () => {
  it('never writes a worker token, join token, API key or authorization, at any depth, in bindings or errors', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'pf-agent-logs-'));
    dirs.push(dataDir);
    const chunks: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer | string, _encoding, done) {
        chunks.push(chunk.toString());
        done();
      },
    });
    const config = loadAgentConfig({
      env: { PIXELFLEET_AGENT_CONTROL_PLANE: '127.0.0.1:1', PIXELFLEET_AGENT_REGION: 'europe', PIXELFLEET_AGENT_JOIN_TOKEN: 'SECRET-JOIN-0123456789abcdefghijklmn', PIXELFLEET_AGENT_DATA_DIR: dataDir },
    });
    const agent = buildAgent(config, { logDestination: sink });
    agent.log.info({ workerToken: 'SECRET-WORKER', joinToken: 'SECRET-JOIN', deeper: { down: { apiKey: 'SECRET-KEY' } } }, 'tokens');
    agent.log.child({ component: 'link', authorization: 'Bearer SECRET-AUTH' }).warn({ list: [{ token: 'SECRET-TOKEN' }] }, 'child');
    agent.log.error({ err: Object.assign(new Error('enroll failed'), { workerToken: 'SECRET-ERR' }) }, 'error');
    await agent.close();
    const text = chunks.join('');
    expect(text).not.toContain('SECRET');
    expect(text.split('\n').filter(Boolean).map((l) => (JSON.parse(l) as { msg: string }).msg)).toEqual(['tokens', 'child', 'error']);
    expect(text).toContain('"workerToken":"[Redacted]"');
  });
});
