// A scripted stand-in for the agent's session runtime, for control-plane tests that need
// sessions to start, run and stop on a real agent without launching an app: each step is
// driven by the test (identify, viewer connected, crash…) through the real control link.
import { CommandFailure, type Agent, type CommandHandlers } from '@pixelfleet/agent';
import type { SessionEventKind, SignalEnvelope } from '@pixelfleet/proto';

export class ScriptedSessions {
  agent: Agent | undefined;
  readonly running = new Map<string, { projectId: string; startedAtMs: number }>();
  readonly started: string[] = [];
  /** The sessions whose StartSession asked the relay to take the app's video before any viewer (a warm instance's). */
  readonly startedWarm: string[] = [];
  readonly stopped: string[] = [];
  readonly signals: SignalEnvelope[] = [];
  /** When set, StartSession fails with this code instead of starting. */
  failStartWith: string | undefined;

  readonly handlers: CommandHandlers = {
    startSession: (c) => {
      if (this.failStartWith !== undefined) {
        return Promise.reject(new CommandFailure(this.failStartWith, 'scripted failure'));
      }
      this.started.push(c.sessionId);
      if (c.warm) this.startedWarm.push(c.sessionId);
      this.running.set(c.sessionId, { projectId: c.projectId, startedAtMs: Date.now() });
      this.report(c.sessionId, 'appStarted');
      return Promise.resolve();
    },
    stopSession: (c) => {
      this.stopped.push(c.sessionId);
      if (this.running.delete(c.sessionId)) this.report(c.sessionId, 'appStopped', { exitCode: 0 });
      return Promise.resolve();
    },
    prepareBuild: () => Promise.resolve(),
    deleteBuild: () => Promise.resolve(),
  };

  readonly inventory = {
    runningSessions: () => [...this.running].map(([sessionId, r]) => ({ sessionId, ...r })),
    cachedBuilds: () => [],
  };

  readonly onSignal = (signal: SignalEnvelope): void => {
    this.signals.push(signal);
  };

  report(sessionId: string, kind: SessionEventKind, extra: { exitCode?: number; message?: string; streamingId?: string } = {}): void {
    if (!this.agent) throw new Error('attach the agent first');
    this.agent.link.sendSessionEvent({ sessionId, kind, occurredAtMs: Date.now(), exitCode: 0, message: '', streamingId: '', ...extra });
  }

  /** Sends a signalling message from this session's relay toward its viewer. */
  signal(sessionId: string, message: Record<string, unknown>): void {
    if (!this.agent) throw new Error('attach the agent first');
    this.agent.link.sendSignal({ sessionId, playerId: '', json: JSON.stringify(message) });
  }

  /** The app dies on its own. */
  crash(sessionId: string): void {
    this.running.delete(sessionId);
    this.report(sessionId, 'appExited', { exitCode: 3, message: 'crashed' });
  }
}
