// A project viewers can open: a live build, and one connected agent of its region whose relay is
// scripted (ScriptedSessions), so a share socket gets a session that is placed.
import type { Clock } from '@pixelfleet/common';
import type { TestControlPlane } from './control-plane';
import { linkReaches, startTestAgent } from './agent';
import { ScriptedSessions } from './scripted-sessions';
import { seedLiveBuild } from './seed';

export interface StreamingProject {
  projectId: string;
  script: ScriptedSessions;
  /** The project's share signalling socket (ws://…/share/<projectId>/signalling). */
  wsUrl: string;
}

/** Creates the project and starts the agent (on agent.clock when given); what needs closing goes on cleanups. */
export async function startStreamingProject(
  t: TestControlPlane,
  cleanups: (() => Promise<void> | void)[],
  name: string,
  agent: { clock?: Clock } = {},
): Promise<StreamingProject> {
  const owner = await t.cp.accounts.createUser(`${name.toLowerCase()}${Date.now()}@example.com`);
  const projectId = (await t.cp.accounts.createProject(owner.userId, name, 'europe')).projectId;
  seedLiveBuild(t.cp, projectId);
  const script = new ScriptedSessions();
  const started = await startTestAgent({
    grpcAddress: t.started.grpcAddress,
    handlers: script.handlers,
    inventory: script.inventory,
    onSignal: script.onSignal,
    ...(agent.clock ? { clock: agent.clock } : {}),
  });
  script.agent = started.agent;
  cleanups.push(() => started.agent.close());
  await linkReaches(started.agent, 'connected');
  return { projectId, script, wsUrl: `${t.started.publicUrls.share.replace(/^http/, 'ws')}/${projectId}/signalling` };
}
