// One streaming session on this worker: a loopback signalling server where the agent plays
// Wilbur toward the Unreal app and is its one player (announced when the viewer subscribes, as
// Wilbur announces a player on its `subscribe`), the app process (launcher), and the werift relay
// between the app and the session's viewer, whose signalling travels over the control link.
// Reports every phase as a session event.
// Longer than ~400 lines: one session's phases share its state (the app, the relay, the streamer
// socket, the stop); the launcher, relay and log collection live in folders of their own.
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Logger } from 'pino';
import { WebSocketServer, type WebSocket } from 'ws';
import { DEFAULT_MAX_MESSAGE_BYTES, decodeViewerToRelay, StreamerEndpoint, type RelayToViewerSignal, type StreamerIdDecision } from '@pixelfleet/signaling';
import { SampledLog, systemClock, type Clock, type TimerHandle } from '@pixelfleet/common';
import type { RelayCounters, SessionEventKind, SignalEnvelope, StartSessionCommand } from '@pixelfleet/proto';
import { unrealSavedDir } from '../build-cache/build-cache';
import { CommandFailure } from '../commands/command';
import { chooseStartBitrateBps } from '../launcher/unreal-command-line';
import { launchSession, type LaunchBuild, type LaunchedSession } from '../launcher/launcher';
import type { AppAccount } from '../launcher/app-accounts';
import { LaunchError } from '../launcher/launch-error';
import { listenOnLoopback } from '../launcher/port-allocator';
import type { AppExit } from '../launcher/app-process';
import type { AppRecordStore } from '../launcher/app-records';
import type { ProcessControl } from '../launcher/process-control';
import type { SessionLogSources } from '../logs/collect-logs';
import { SessionRelay } from '../relay/session-relay';
import type { RelayIceCandidate } from '../relay/relay-types';
import type { IceCandidateInit } from '@pixelfleet/signaling';

/** The player id the agent uses toward the app (it is the app's only player). */
export const RELAY_PLAYER_ID = 'pixelfleet-relay';

/** Close reasons (1008) for a streamer the session refuses (see decideStreamerId). */
export const SECOND_STREAMER_REASON = 'this session already has a streamer';
export const OTHER_STREAMER_REASON = 'this session streams another streamer id';

export interface SessionRuntimeOptions {
  command: StartSessionCommand;
  /** launcher.command from the config (required off Windows). */
  launcherCommand: readonly string[] | undefined;
  /** The extracted build and its manifest, when the build cache holds the session's build (held for the app's life). */
  build: LaunchBuild | undefined;
  /** Folder for this session's logs. */
  sessionDir: string;
  /** The app's complete environment. */
  appEnv: Readonly<Record<string, string>>;
  /**
   * Gives the app its uid and gid (`appAccounts`), just before it is launched, after the last stop
   * check; none: it runs as the agent. The session manager takes the account back when the session
   * has finished, launched or not.
   * @throws CommandFailure when no account can be given
   */
  grantAppAccount?: () => Promise<AppAccount>;
  ice: {
    iceServers: { urls: string | string[]; username?: string; credential?: string }[];
    hostAddresses: string[];
    portRange?: { min: number; max: number };
    publicIp?: string;
  };
  report: (kind: SessionEventKind, extra?: { exitCode?: number; message?: string; streamingId?: string }) => void;
  /** Sends a signalling message toward the viewer. */
  signal: (signal: RelayToViewerSignal) => void;
  /** Called once when the app has exited and everything is released, with where its logs may be (undefined: nothing was launched). */
  onFinished: (exit: AppExit, logs: SessionLogSources | undefined) => void;
  log: Logger;
  /** Time source of startedAtMs, the startup timeout, the launcher and the relay (default systemClock). */
  clock?: Clock;
  /** Where the app is recorded before it is spawned, so a restarted agent finds it after a crash. */
  appRecords?: AppRecordStore;
  /** How the app's tree is spawned and ended; default processControlFor(process.platform). */
  processControl?: ProcessControl;
}

/**
 * launching: the app has not identified itself yet. identified: it has, and no viewer is
 * subscribed. subscribed: the viewer subscribed, so the app has our player: playerConnected went
 * out then, and goes out again whenever the app identifies anew (a re-dialled signalling socket).
 * stopping: stop() was called. finished: the app is gone and everything is released.
 */
type Phase = 'launching' | 'identified' | 'subscribed' | 'stopping' | 'finished';

export class SessionRuntime {
  readonly sessionId: string;
  readonly projectId: string;
  /** The session's build ('' for a local build run by launcher.command). */
  readonly uploadId: string;
  readonly startedAtMs: number;
  private readonly clock: Clock;
  private phase: Phase = 'launching';
  private server: Server | undefined;
  private wss: WebSocketServer | undefined;
  /** The socket of the session's streamer, once one identified and while it stays open. */
  private streamer: StreamerEndpoint | undefined;
  /** The first streamer id the app identified with: the one the viewer is bound to for the whole session. */
  private boundStreamerId: string | undefined;
  /** Streamer ids refused so far; each is logged at warn once (PS2 re-dials a refused streamer every 2 s). */
  private readonly refusedStreamerIds = new Set<string>();
  private relay: SessionRelay | undefined;
  private app: LaunchedSession | undefined;
  private startupTimer: TimerHandle | undefined;
  private readonly identified: Promise<void>;
  private resolveIdentified!: () => void;
  private rejectIdentified!: (err: Error) => void;
  private stopRequested = false;
  /** The app has identified itself at least once (whatever the phase became since). */
  private hasIdentified = false;
  /** appStarted went out: its end is reported too (appStopped/appExited), even before it identified. */
  private appAnnounced = false;
  private inputSeen = 0;
  private lastInputAtMs: number | undefined;
  /**
   * The path of the URL the app is given (`ws://127.0.0.1:<port>/<secret>`): another process on
   * the worker (a rival customer's app) can find the port, not this. An upgrade without it is refused.
   */
  private readonly signallingSecret = randomBytes(32).toString('base64url');
  /** Refused upgrades: the first logged at warn, then one line a minute at most with the count since (a rival can dial at will). */
  private readonly refusedUpgrades: ReturnType<SampledLog['for']>;

  constructor(private readonly options: SessionRuntimeOptions) {
    this.sessionId = options.command.sessionId;
    this.projectId = options.command.projectId;
    this.uploadId = options.command.uploadId;
    this.clock = options.clock ?? systemClock;
    this.refusedUpgrades = new SampledLog(this.clock, options.log).for('app signalling port');
    this.startedAtMs = this.clock.now();
    this.identified = new Promise<void>((resolve, reject) => {
      this.resolveIdentified = resolve;
      this.rejectIdentified = reject;
    });
    // The start() caller awaits it; a failure before that must not go unhandled.
    this.identified.catch(() => undefined);
  }

  /** True when the upgrade's path is the session's secret (compared in constant time). */
  private knowsSecret(req: IncomingMessage): boolean {
    const given = Buffer.from(req.url ?? '');
    const expected = Buffer.from(`/${this.signallingSecret}`);
    return given.length === expected.length && timingSafeEqual(given, expected);
  }

  /** An app was launched: its exit, whenever it comes, ends in onFinished. */
  get launched(): boolean {
    return this.app !== undefined;
  }

  /** The Pixel Streaming player id of the session's viewer (the relay knows the viewer by it). */
  get playerId(): string {
    return this.options.command.playerId;
  }

  /**
   * Launches the app and resolves once it has identified itself to our signalling server.
   * Throws CommandFailure (LAUNCH_FAILED, STARTUP_TIMEOUT) and cleans up on failure.
   */
  async start(): Promise<void> {
    const c = this.options.command;
    const log = this.options.log;
    this.refuseIfStopped();
    if (c.codec !== 'H264') {
      // The relay forwards H.264 (42e01f, packetization-mode 1) without transcoding.
      this.phase = 'finished';
      throw new CommandFailure('UNSUPPORTED_CODEC', `codec ${c.codec} cannot be relayed yet; use H264`);
    }
    this.relay = new SessionRelay({
      iceServers: this.options.ice.iceServers,
      hostAddresses: this.options.ice.hostAddresses,
      ...(this.options.ice.portRange ? { portRange: this.options.ice.portRange } : {}),
      ...(this.options.ice.publicIp ? { publicIp: this.options.ice.publicIp } : {}),
      bitrate: { startBps: chooseStartBitrateBps(c), minBps: c.minBitrateBps, maxBps: c.maxBitrateBps },
      clock: this.clock,
      log: log.child({ component: 'relay' }),
    });
    this.relay.on('viewerConnected', () => this.options.report('viewerConnected'));
    // The relay's own witness that video reached a viewer, for the session's diagnosis (sent once).
    this.relay.on('videoShown', () => this.options.report('videoShown'));
    this.relay.on('viewerDisconnected', (_id, reason) => this.options.report('viewerDisconnected', { message: reason }));
    this.relay.on('ingestFailed', (reason) => log.warn({ reason }, 'ingest from the app failed'));
    this.relay.onStreamerCandidate((candidate) => this.streamer?.sendIceCandidate(RELAY_PLAYER_ID, toIceCandidateInit(candidate)));
    this.relay.onViewerCandidate((_playerId, candidate) => this.options.signal({ type: 'iceCandidate', candidate: toIceCandidateInit(candidate) }));
    // The viewer's browser builds its peer connection from this; it may come before the app is up.
    this.options.signal({ type: 'config', peerConnectionOptions: { iceServers: this.options.ice.iceServers } });

    this.server = createServer((_req, res) => res.writeHead(426).end());
    this.wss = new WebSocketServer({
      server: this.server,
      maxPayload: DEFAULT_MAX_MESSAGE_BYTES,
      // Before anything is read from the socket: a refused dialler never reaches the streamer slot.
      verifyClient: ({ req }, done) => {
        if (this.knowsSecret(req)) return done(true);
        this.refusedUpgrades.warn({ remotePort: req.socket.remotePort }, 'app signalling upgrade refused: the URL lacks the session secret (another process on this worker dialled the session port)');
        done(false, 401, 'Unauthorized');
      },
    });
    this.wss.on('connection', (socket) => this.onStreamerSocket(socket));
    let port: number;
    try {
      port = await listenOnLoopback(this.server);
    } catch (err) {
      await this.release();
      this.phase = 'finished';
      throw new CommandFailure('LAUNCH_FAILED', `no loopback port for the app's signalling: ${(err as Error).message}`);
    }

    try {
      this.refuseIfStopped();
      const account = await this.options.grantAppAccount?.();
      this.refuseIfStopped();
      this.app = await launchSession({
        sessionId: this.sessionId,
        command: this.options.launcherCommand,
        build: this.options.build,
        projectName: 'PixelfleetApp',
        settings: c,
        sessionDir: this.options.sessionDir,
        signallingPort: port,
        signallingSecret: this.signallingSecret,
        streamerId: c.streamingId,
        env: this.options.appEnv,
        ...(account ? { account } : {}),
        clock: this.clock,
        log,
        ...(this.options.appRecords ? { record: { store: this.options.appRecords, sessionId: this.sessionId, uploadId: c.uploadId } } : {}),
        ...(this.options.processControl ? { control: this.options.processControl } : {}),
      });
    } catch (err) {
      await this.release();
      this.phase = 'finished';
      if (err instanceof LaunchError) throw new CommandFailure(err.code, err.message);
      throw err;
    }
    this.app.process.on('exited', (exit) => void this.onAppExited(exit));
    // stop() came during the launch itself, when there was no app yet to stop: it goes at once,
    // unannounced (the failed start, STOPPED, is the whole story).
    if (this.stopRequested) {
      void this.app.process.stop({ graceMs: 2_000 });
      return await this.identified;
    }
    this.options.report('appStarted');
    this.appAnnounced = true;
    log.info({ pid: this.app.process.pid, port }, 'app launched');

    this.startupTimer = this.clock.setTimeout(() => {
      log.warn({ timeoutSeconds: c.startupTimeoutSeconds }, 'app did not identify itself in time; stopping it');
      this.rejectIdentified(new CommandFailure('STARTUP_TIMEOUT', `the app did not connect within ${c.startupTimeoutSeconds} s`));
      void this.stop(2_000);
    }, c.startupTimeoutSeconds * 1000);
    await this.identified;
  }

  /**
   * When the viewer last sent input (any viewer-to-app data-channel message), sampled from the
   * relay's counter: heartbeat granularity is plenty for an AFK timeout measured in minutes.
   */
  lastInputAt(nowMs: number): number | undefined {
    const seen = this.relay?.stats().dataChannelMessagesToApp ?? 0;
    if (seen > this.inputSeen) {
      this.inputSeen = seen;
      this.lastInputAtMs = nowMs;
    }
    return this.lastInputAtMs;
  }

  /** The relay's counters for the fleet's metrics; undefined before the relay exists. */
  relayCounters(): RelayCounters | undefined {
    const stats = this.relay?.stats();
    if (stats === undefined) return undefined;
    const { keyframeRequestsMade, keyframeRequestsToApp, keyframeRequestsCoalesced, ingestPacketsMissing, ingestPacketsAbandoned, viewerPacketsResent, viewerNackMisses, rembBps, viewersShownVideo } = stats;
    return { keyframeRequestsMade, keyframeRequestsToApp, keyframeRequestsCoalesced, ingestPacketsMissing, ingestPacketsAbandoned, viewerPacketsResent, viewerNackMisses, rembBps, viewersShownVideo };
  }

  /**
   * Reports `appIdentified` again when the app has identified (a new control link: a control plane
   * that restarted knows the session from its store, but not that its viewer may subscribe now),
   * with the viewer's config before it while no viewer subscribed: a warm instance's config, sent
   * when it started, went with the control plane that restarted (one that has it passes on one per viewer).
   */
  reannounceIdentified(): void {
    const streamerId = this.streamer?.streamerId;
    if (this.phase === 'identified' && streamerId !== undefined) this.options.signal({ type: 'config', peerConnectionOptions: { iceServers: this.options.ice.iceServers } });
    if ((this.phase === 'identified' || this.phase === 'subscribed') && streamerId !== undefined) this.options.report('appIdentified', { streamingId: streamerId });
  }

  /** A viewer's signalling message relayed by the control plane. */
  async handleViewerSignal(signal: SignalEnvelope): Promise<void> {
    const relay = this.relay;
    if (!relay || this.phase === 'finished' || this.phase === 'stopping') return;
    const decoded = decodeViewerToRelay(signal.json);
    if (!decoded.ok) {
      this.options.log.warn({ reason: decoded.reason }, 'viewer signal rejected');
      return;
    }
    const m = decoded.signal;
    try {
      switch (m.type) {
        case 'subscribe': {
          // Before the relay's own offer is made: the app's offer and the viewer's negotiation run side by side.
          this.onViewerSubscribed();
          const sdp = await relay.addViewer(this.playerId);
          this.options.signal({ type: 'offer', sdp });
          break;
        }
        case 'answer':
          await relay.acceptViewerAnswer(this.playerId, m.sdp);
          break;
        case 'iceCandidate':
          await relay.addViewerCandidate(this.playerId, m.candidate);
          break;
        case 'unsubscribe':
          this.onViewerUnsubscribed();
          relay.removeViewer(this.playerId);
          break;
        default: {
          const unreachable: never = m;
          this.options.log.warn({ signal: String(unreachable) }, 'viewer signal of an unknown type');
        }
      }
    } catch (err) {
      this.options.log.warn({ err: (err as Error).message, type: m.type }, 'viewer signal failed');
    }
  }

  /**
   * A stop that came while the start was waiting (for a port, for the build folder's sweep) ends
   * the start before anything is launched: nothing would stop an app launched after it.
   * @throws CommandFailure STOPPED
   */
  private refuseIfStopped(): void {
    if (!this.stopRequested) return;
    this.phase = 'finished';
    throw new CommandFailure('STOPPED', 'the session was stopped before its app was launched');
  }

  /** Stops the app (graceful, forced after graceMs); resolves when it has exited. Idempotent. */
  async stop(graceMs: number): Promise<void> {
    this.stopRequested = true;
    // A start still waiting for the app to identify ends now: the app will not be waited for.
    if (!this.hasIdentified) this.rejectIdentified(new CommandFailure('STOPPED', 'the session was stopped before its app connected'));
    if (this.phase === 'finished') return;
    this.phase = 'stopping';
    if (this.app) await this.app.process.stop({ graceMs });
    else await this.release();
  }

  /**
   * The viewer subscribed: the app hears of our player now (playerConnected; it answers with its
   * offer), as Wilbur tells a streamer of a player when that player subscribes, not when it connects.
   */
  private onViewerSubscribed(): void {
    if (this.phase !== 'identified' && this.phase !== 'subscribed') {
      // The gateway lists the streamer only once the app has identified, so this is a client out of turn.
      this.options.log.warn({ phase: this.phase }, 'the viewer subscribed before the app identified; the app is not told');
      return;
    }
    this.phase = 'subscribed';
    this.connectRelayPlayer();
  }

  /** As Wilbur on `unsubscribe`: the app hears playerDisconnected and closes its peer connection. */
  private onViewerUnsubscribed(): void {
    if (this.phase === 'subscribed') this.phase = 'identified';
    this.streamer?.disconnectPlayer(RELAY_PLAYER_ID);
  }

  /** playerConnected for our player, unless the app has it already or has not identified. */
  private connectRelayPlayer(): void {
    const streamer = this.streamer;
    if (streamer?.streamerId === undefined || streamer.hasPlayer(RELAY_PLAYER_ID)) return;
    streamer.connectPlayer(RELAY_PLAYER_ID);
  }

  /**
   * Every socket the app opens is greeted (config, identify); the first to send `endpointId` becomes
   * the session's streamer, and its id is bound for the session. An app that registers more streamers
   * from one process (PS2's CreateStreamer: another socket, or another `endpointId` on the same one)
   * is refused for those, so the viewer stays with the first.
   */
  private onStreamerSocket(socket: WebSocket): void {
    const streamer: StreamerEndpoint = new StreamerEndpoint(socket, {
      peerConnectionOptions: {},
      decideStreamerId: (requestedId) => this.decideStreamerId(streamer, requestedId),
    });
    const log = this.options.log;
    streamer.on('streamerIdRefused', (refusedStreamerId, outcome) => {
      // The session's logger carries sessionId (the session manager binds it).
      const fields = { refusedStreamerId, streamerId: this.boundStreamerId, outcome };
      if (this.refusedStreamerIds.has(refusedStreamerId)) return log.debug(fields, 'another streamer of the app refused again');
      this.refusedStreamerIds.add(refusedStreamerId);
      log.warn(fields, 'the app registered another streamer; refused, the session streams its first');
    });
    streamer.on('identified', (streamerId) => {
      this.startupTimer?.cancel();
      this.hasIdentified = true;
      if (this.phase === 'launching') this.phase = 'identified';
      log.info({ streamerId }, 'app identified');
      this.options.report('appIdentified', { streamingId: streamerId });
      // No player yet: the app hears of ours when the viewer subscribes. An app that re-dialled its
      // signalling while the viewer watches gets it back at once. A warm instance's app gets it now:
      // the relay takes its video before any viewer, and a viewer who claims it joins a running
      // stream (its keyframe asked for as it joins) instead of waiting for the app's negotiation.
      if (this.phase === 'subscribed' || this.options.command.warm) this.connectRelayPlayer();
      this.resolveIdentified();
    });
    streamer.on('offer', (playerId, sdp) => {
      if (playerId !== RELAY_PLAYER_ID || !this.relay) return;
      this.relay.acceptStreamerOffer(sdp).then(
        (answer) => streamer.sendAnswer(RELAY_PLAYER_ID, answer),
        (err: unknown) => log.warn({ err: (err as Error).message }, 'the app offer was refused'),
      );
    });
    streamer.on('iceCandidate', (playerId, candidate) => {
      if (playerId === RELAY_PLAYER_ID) void this.relay?.addStreamerCandidate(candidate).catch((err: unknown) => log.debug({ err }, 'app candidate refused'));
    });
    streamer.on('disconnectPlayer', (playerId, reason) => {
      if (playerId !== RELAY_PLAYER_ID) return;
      log.info({ reason }, 'the app disconnected the viewer');
      if (this.phase === 'subscribed') this.phase = 'identified';
      // As Wilbur, which closes that player's socket: the app hears playerDisconnected, and a repeat
      // is dropped by the endpoint. The viewer's peer stays until the control plane has closed the
      // viewer's signalling with the app's reason and stopped the session, so the page shows that
      // close, not a failed video connection.
      streamer.disconnectPlayer(RELAY_PLAYER_ID);
      this.options.report('appDisconnectedViewer', { message: reason ?? '' });
    });
    streamer.on('protocolError', (reason) => log.warn({ reason }, 'app signalling rejected'));
    streamer.on('closed', (code, reason) => {
      if (this.streamer !== streamer) return log.debug({ code, reason }, 'app signalling closed (not the session streamer)');
      log.info({ code, reason }, 'app signalling closed');
      this.streamer = undefined;
    });
  }

  /**
   * The session's rule for each `endpointId` (StreamerEndpoint's decideStreamerId). The first id
   * to identify binds the session; its socket is the streamer. Then:
   * - the streamer's socket again with the bound id: confirmed (a repeat); with another id: the
   *   bound one is confirmed instead, and the socket stays up for it (closing it would end the
   *   viewer's stream too);
   * - another socket while the streamer's is open: closed (1008), whatever its id;
   * - a socket after the streamer's closed (the app re-dialled): it becomes the streamer if it
   *   brings the bound id, else it is closed, so a re-dial race cannot swap the viewer's streamer.
   */
  private decideStreamerId(endpoint: StreamerEndpoint, requestedId: string): StreamerIdDecision {
    if (this.streamer === endpoint) return requestedId === this.boundStreamerId ? { kind: 'commit' } : { kind: 'keep' };
    if (this.streamer !== undefined) return { kind: 'refuse', reason: SECOND_STREAMER_REASON };
    if (this.boundStreamerId !== undefined && requestedId !== this.boundStreamerId) return { kind: 'refuse', reason: OTHER_STREAMER_REASON };
    this.boundStreamerId = requestedId;
    this.streamer = endpoint;
    return { kind: 'commit' };
  }

  private async onAppExited(exit: AppExit): Promise<void> {
    this.startupTimer?.cancel();
    // An app stopped after it was announced ends as before (appStopped), identified or not.
    const wasIdentified = this.hasIdentified || (this.stopRequested && this.appAnnounced);
    const expected = exit.expected || this.stopRequested;
    this.phase = 'finished';
    const exitCode = exit.code ?? -1;
    const message = exit.spawnError ?? (exit.signal ? `signal ${exit.signal}` : `exit code ${exitCode}`);
    this.options.log.info({ exitCode, signal: exit.signal, expected, forced: exit.forced }, 'app exited');
    if (!wasIdentified) {
      // It never connected: the failed start is the whole story (the control plane closes with
      // 4003). After a startup timeout the rejection already happened and this one is a no-op.
      this.rejectIdentified(new CommandFailure('LAUNCH_FAILED', `the app exited before connecting (${message})`));
    } else {
      this.options.report(expected ? 'appStopped' : 'appExited', { exitCode, message });
    }
    await this.release();
    const build = this.options.build;
    const logs: SessionLogSources | undefined = this.app && {
      sessionId: this.sessionId,
      startedAtMs: this.startedAtMs,
      absLogPath: this.app.logPath,
      outputLogPath: this.app.outputLogPath,
      savedDir: build && unrealSavedDir(build.dir, build.manifest),
      // The app's own pid (a crash context names it), not the app-job launcher's on Windows.
      pid: this.app.process.appPid,
    };
    this.options.onFinished(exit, logs);
  }

  /** Releases the relay and the signalling server. */
  private async release(): Promise<void> {
    this.streamer?.close(1001, 'session ended');
    // One line per session with what the relay did (loss, repair, keyframe requests, bitrate), for
    // operators reading an agent's log after a viewer complained.
    if (this.relay) this.options.log.info({ relay: this.relay.stats() }, 'relay summary');
    this.relay?.close();
    for (const client of this.wss?.clients ?? []) client.terminate();
    await new Promise<void>((resolve) => (this.wss ? this.wss.close(() => resolve()) : resolve()));
    await new Promise<void>((resolve) => (this.server?.listening ? this.server.close(() => resolve()) : resolve()));
  }
}

/** werift leaves sdpMid/sdpMLineIndex optional; Pixel Streaming peers expect both (bundle: m-line 0). */
function toIceCandidateInit(c: RelayIceCandidate): IceCandidateInit {
  return { candidate: c.candidate, sdpMid: c.sdpMid ?? '0', sdpMLineIndex: c.sdpMLineIndex ?? 0 };
}
