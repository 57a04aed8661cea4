// The sessions of this worker: StartSession/StopSession handlers (idempotent by session id),
// PrepareBuild/DeleteBuild handed to the build cache, the inventory each Hello reports, routing
// of viewer signalling to the right session, and the spooling of each finished session's logs.
import { join } from 'node:path';
import type { Logger } from 'pino';
import { encodeRelayedSignal } from '@pixelfleet/signaling';
import { systemClock, type Clock } from '@pixelfleet/common';
import type { AgentSessionEvent, CachedBuild, RunningSession, SessionActivity, SignalEnvelope, StartSessionCommand, StopSessionCommand } from '@pixelfleet/proto';
import { CommandFailure, type CommandHandlers } from '../commands/command';
import type { AgentInventory } from '../agent-inventory';
import { unrealSavedDir, type BuildCache, type BuildLease } from '../build-cache/build-cache';
import type { AppRecordStore } from '../launcher/app-records';
import type { AppAccount, AppAccountGrants } from '../launcher/app-accounts';
import { processControlFor, type ProcessControl } from '../launcher/process-control';
import type { SessionLogSources } from '../logs/collect-logs';
import { SessionRuntime, type SessionRuntimeOptions } from './session-runtime';

export interface SessionManagerOptions {
  slots: number;
  dataDir: string;
  launcherCommand: readonly string[] | undefined;
  appEnv: Readonly<Record<string, string>>;
  ice: SessionRuntimeOptions['ice'];
  /** Reports a session event on the control link (held while it is down, sent once it is back). */
  report: (event: AgentSessionEvent) => void;
  /** Relays a signalling message toward a viewer. */
  signal: (signal: SignalEnvelope) => void;
  /** Collects and spools a finished session's logs (any exit, a failed start included); failures are logged, not fatal. */
  spoolLogs: (logs: SessionLogSources) => Promise<void>;
  log: Logger;
  /** Time source of event times, input activity and every session's timers (default systemClock). */
  clock?: Clock;
  /** Runs PrepareBuild/DeleteBuild and lists cached builds; without it PrepareBuild fails UNSUPPORTED. */
  builds?: BuildCache;
  /** Where every app is recorded before it is spawned (`<dataDir>/apps`), so a restarted agent finds what a crash left running. */
  appRecords?: AppRecordStore;
  /** How apps are ended, and what sweeps a build's folder after its last session; default processControlFor(process.platform). */
  processControl?: ProcessControl;
  /** `appAccounts`: each app under an account of its own, with only its folders (Linux: app-accounts.ts; Windows: windows-app-accounts.ts). */
  appAccounts?: AppAccountGrants;
}

export class SessionManager implements AgentInventory {
  private readonly sessions = new Map<string, SessionRuntime>();
  /** Finished sessions' logs being collected into the spool. */
  private readonly spooling = new Set<Promise<void>>();
  /** Build folder sweeps under way, by upload id: a session of that build starts after its sweep, which would end its app. */
  private readonly sweeps = new Map<string, Promise<void>>();

  private readonly clock: Clock;
  private readonly processControl: ProcessControl;

  constructor(private readonly options: SessionManagerOptions) {
    this.clock = options.clock ?? systemClock;
    this.processControl = options.processControl ?? processControlFor(process.platform);
  }

  readonly handlers: CommandHandlers = {
    startSession: (c) => this.start(c),
    stopSession: (c) => this.stop(c),
    prepareBuild: async (c, progress) => {
      if (!this.options.builds) throw new CommandFailure('UNSUPPORTED', 'this agent has no build cache');
      await this.options.builds.prepare(c, progress);
    },
    deleteBuild: async (c) => {
      await this.options.builds?.delete(c.uploadId);
    },
  };

  runningSessions(): RunningSession[] {
    return [...this.sessions.values()].map((s) => ({ sessionId: s.sessionId, projectId: s.projectId, startedAtMs: s.startedAtMs }));
  }

  cachedBuilds(): CachedBuild[] {
    return this.options.builds?.list() ?? [];
  }

  sessionActivity(): SessionActivity[] {
    const now = this.clock.now();
    return [...this.sessions.values()].map((s) => ({ sessionId: s.sessionId, lastInputAtMs: s.lastInputAt(now), relay: s.relayCounters() }));
  }

  /** After each Welcome: every session whose app has identified says so again (see SessionRuntime.reannounceIdentified). */
  reannounceIdentified(): void {
    for (const session of this.sessions.values()) session.reannounceIdentified();
  }

  onSignal(signal: SignalEnvelope): void {
    const session = this.sessions.get(signal.sessionId);
    if (!session) {
      this.options.log.debug({ sessionId: signal.sessionId }, 'signal for a session this worker does not run');
      return;
    }
    void session.handleViewerSignal(signal);
  }

  /** Stops every session (agent shutdown) and waits until their logs are spooled. */
  async close(graceMs = 10_000): Promise<void> {
    await Promise.all([...this.sessions.values()].map((s) => s.stop(graceMs)));
    await Promise.allSettled([...this.spooling]);
  }

  private async start(c: StartSessionCommand): Promise<void> {
    if (this.sessions.has(c.sessionId)) return; // a repeat of a start that is still running
    if (this.sessions.size >= this.options.slots) throw new CommandFailure('NO_FREE_SLOT', `all ${this.options.slots} slots are busy`);
    const log = this.options.log.child({ sessionId: c.sessionId });
    // The session's build, held in the cache for as long as its app runs (never evicted meanwhile).
    // Not cached: a local build, which launcher.command stands in for.
    const lease = c.uploadId !== '' && this.options.builds?.get(c.uploadId) !== undefined ? this.options.builds.acquire(c.uploadId) : undefined;
    const sessionDir = join(this.options.dataDir, 'sessions', c.sessionId);
    const accounts = this.options.appAccounts;
    const runtime: SessionRuntime = new SessionRuntime({
      command: c,
      launcherCommand: this.options.launcherCommand,
      build: lease && { dir: lease.path, manifest: lease.manifest },
      sessionDir,
      appEnv: this.options.appEnv,
      ...(accounts ? { grantAppAccount: () => this.grantAppAccount(accounts, c, lease, sessionDir) } : {}),
      ice: this.options.ice,
      report: (kind, extra) => this.options.report({ sessionId: c.sessionId, kind, occurredAtMs: this.clock.now(), exitCode: 0, message: '', streamingId: '', ...extra }),
      signal: (message) => this.options.signal({ sessionId: c.sessionId, playerId: c.playerId, json: encodeRelayedSignal(message) }),
      onFinished: (_exit, logs) => this.leave(runtime, lease, log, logs),
      log,
      clock: this.clock,
      ...(this.options.appRecords ? { appRecords: this.options.appRecords } : {}),
      processControl: this.processControl,
    });
    this.sessions.set(c.sessionId, runtime);
    try {
      await this.sweeps.get(c.uploadId);
      await runtime.start();
    } catch (err) {
      // A failed start holds no slot. One that launched nothing is over; one whose app was launched
      // (a startup timeout: it is being stopped) keeps its build until onFinished, after the sweep.
      if (!runtime.launched) this.leave(runtime, lease, log, undefined);
      else if (this.sessions.get(c.sessionId) === runtime) this.sessions.delete(c.sessionId);
      throw err;
    }
  }

  /**
   * A session is over on this worker: its slot is free at once; then what its app left running from
   * the build's folder is swept (a crash reporter still holds its files), its logs are spooled, and
   * only then is its build released (eviction may remove the build's Saved folder).
   */
  private leave(runtime: SessionRuntime, lease: BuildLease | undefined, log: Logger, logs: SessionLogSources | undefined): void {
    if (this.sessions.get(runtime.sessionId) === runtime) this.sessions.delete(runtime.sessionId);
    const swept = lease ? this.sweepBuildFolder(runtime.uploadId, lease.path, log) : Promise.resolve();
    const spooled = swept
      .then(() => (logs ? this.options.spoolLogs(logs) : undefined))
      .catch((err: unknown) => log.warn({ err: (err as Error).message }, 'session logs could not be spooled'))
      // Its uid's processes killed and its folders root's again before the account is given out anew.
      .then(() => this.options.appAccounts?.revoke(runtime.sessionId))
      .catch((err: unknown) => log.error({ err: (err as Error).message }, "the app's account could not be taken back"))
      .finally(() => lease?.release());
    this.spooling.add(spooled);
    void spooled.finally(() => this.spooling.delete(spooled));
  }

  /**
   * After a session's app exited (the tree ended: asked, then forced): ends whatever still runs
   * from its build's folder, such as a crash reporter or a helper that left the app's tree, unless
   * another session of this worker uses the same build (its app would be ended too). Never rejects.
   */
  private sweepBuildFolder(uploadId: string, folder: string, log: Logger): Promise<void> {
    if ([...this.sessions.values()].some((s) => s.uploadId === uploadId)) return Promise.resolve();
    const sweep = Promise.resolve()
      .then(() => this.processControl.sweepFolder(folder))
      .then(
        (stopped) => {
          if (stopped.length > 0) log.warn({ uploadId, folder, pids: stopped }, 'ended processes the session left running from its build folder');
        },
        (err: unknown) => log.warn({ uploadId, folder, err: (err as Error).message }, 'cannot sweep the build folder for processes the session left'),
      );
    this.sweeps.set(uploadId, sweep);
    void sweep.finally(() => {
      if (this.sweeps.get(uploadId) === sweep) this.sweeps.delete(uploadId);
    });
    return sweep;
  }

  /** The app's account and folders (app-accounts.ts); leave() takes them back, whether the app launched or not. */
  private async grantAppAccount(accounts: AppAccountGrants, c: StartSessionCommand, lease: BuildLease | undefined, sessionDir: string): Promise<AppAccount> {
    let account: AppAccount | undefined;
    const build = lease && { uploadId: c.uploadId, dir: lease.path, savedDir: unrealSavedDir(lease.path, lease.manifest) };
    try {
      account = await accounts.grant(c.sessionId, build, sessionDir);
    } catch (err) {
      throw new CommandFailure('LAUNCH_FAILED', `cannot give the app its account and folders: ${(err as Error).message}`);
    }
    if (account === undefined) throw new CommandFailure('NO_FREE_SLOT', 'every app account (appAccounts.count) is in use');
    return account;
  }

  private async stop(c: StopSessionCommand): Promise<void> {
    const session = this.sessions.get(c.sessionId);
    if (session) await session.stop(c.graceMs);
  }
}
