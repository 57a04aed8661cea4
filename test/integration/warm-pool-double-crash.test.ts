// A warm instance loading when the control plane goes down, then its agent crashing before the
// control plane is back: whether the agent had finished the instance's StartSession (journaled, its
// ack lost with the link) decides what the restarted agent says when the start is sent again, and
// the control plane must end an instance whose app died with the agent rather than keep it starting.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import type { Agent } from '@pixelfleet/agent';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';
import { linkReaches, startTestAgent } from '../support/agent';
import { ScriptedSessions } from '../support/scripted-sessions';
import { seedLiveBuild, sessionRecord, setProjectSettings } from '../support/seed';

const cleanups: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

/** An agent run on `dataDir` whose scripted apps load until the test says they identified (their StartSession finishes then, as the real runtime's does). */
async function scriptedAgent(grpcAddress: string, dataDir?: string): Promise<{ agent: Agent; dataDir: string; script: ScriptedSessions; identify: (sessionId: string) => void }> {
  const script = new ScriptedSessions();
  const loading = new Map<string, () => void>();
  const handlers: typeof script.handlers = {
    ...script.handlers,
    startSession: async (c) => {
      await script.handlers.startSession(c);
      await new Promise<void>((resolve) => loading.set(c.sessionId, resolve));
    },
  };
  const started = await startTestAgent({ grpcAddress, slots: 2, handlers, inventory: script.inventory, onSignal: script.onSignal, ...(dataDir === undefined ? {} : { dataDir }) });
  script.agent = started.agent;
  const identify = (sessionId: string) => {
    script.report(sessionId, 'appIdentified', { streamingId: `streamer_${sessionId}` });
    loading.get(sessionId)?.();
  };
  return { ...started, script, identify };
}

/** Outcomes the agent's command journal holds (`<dataDir>/journal.json`). */
const journaled = (dataDir: string): number => {
  try {
    return (JSON.parse(readFileSync(join(dataDir, 'journal.json'), 'utf8')) as { outcomes: unknown[] }).outcomes.length;
  } catch {
    return 0;
  }
};

describe('a warm instance whose control plane and agent both crash while it loads', () => {
  for (const finished of [true, false]) {
    it(finished
      ? 'its app identified and the agent journaled the start before crashing: sent the start again, the restarted agent answers from its journal; the control plane ends the instance and the pool launches a fresh one'
      : 'the agent crashed before the start finished: sent it again, the restarted agent launches the instance once more and the control plane keeps it', async () => {
      const first: TestControlPlane = await startTestControlPlane();
      const owner = (await first.cp.accounts.createUser(`o${Date.now()}${Math.random()}@example.com`)).userId;
      const { projectId } = await first.cp.accounts.createProject(owner, 'Warm', 'europe');
      seedLiveBuild(first.cp, projectId);
      const crashed = await scriptedAgent(first.started.grpcAddress);
      cleanups.push(() => rmSync(crashed.dataDir, { recursive: true, force: true }));
      await linkReaches(crashed.agent, 'connected');
      setProjectSettings(first.cp, projectId, { warmPoolMinIdle: 1 });
      first.cp.sessions.warmPoolSettingsChanged(projectId);
      await expect.poll(() => crashed.script.started.length).toBe(1);
      const [instance] = crashed.script.started as [string];

      const grpcPort = Number(first.started.grpcAddress.split(':')[1]);
      await first.stop();
      if (finished) {
        // Identified while no control plane hears: journaled SUCCEEDED, the ack and the event held by a link that is down.
        const before = journaled(crashed.dataDir);
        crashed.identify(instance);
        await expect.poll(() => journaled(crashed.dataDir)).toBe(before + 1);
      }
      // The agent dies with its app (the restarted agent's sweep would stop it): what it held goes with it.
      await crashed.agent.close();

      const second = await startTestControlPlane({ dataDir: first.dataDir, grpcPort });
      cleanups.push(() => second.destroy());
      const restarted = await scriptedAgent(second.started.grpcAddress, crashed.dataDir);
      cleanups.push(() => restarted.agent.close());
      await linkReaches(restarted.agent, 'connected');

      if (finished) {
        await expect.poll(() => sessionRecord(second.cp, instance)?.status).toBe('Terminated');
        expect(sessionRecord(second.cp, instance)?.endReason).toBe('worker lost the session');
        // Its slot is free again: the pool launches a fresh instance on the restarted agent.
        await expect.poll(() => restarted.script.started.length).toBe(1);
        expect(restarted.script.started[0]).not.toBe(instance);
        expect(second.cp.sessions.warm.ofProject(projectId).map((i) => i.sessionId)).toEqual(restarted.script.started);
      } else {
        await expect.poll(() => restarted.script.started).toEqual([instance]);
        restarted.identify(instance);
        await expect.poll(() => second.cp.sessions.warm.countByState()).toEqual({ starting: 0, ready: 1, ending: 0 });
        expect(sessionRecord(second.cp, instance)?.status).toBe('Starting');
        expect(second.cp.sessions.warm.ofProject(projectId).map((i) => i.sessionId)).toEqual([instance]);
      }
    });
  }
});
