// The worker registry: enrollment, the one live Connect stream per worker (which of two keeps it:
// stream-takeover.ts), leases from heartbeats, drain/undrain, and at-least-once command delivery
// with acks. Link state changes go through WORKER_LINK_TABLE; every change is a fleet event.
// Longer than ~400 lines: the one writer of worker state, whose link table, live streams, leases
// and command delivery all change the same rows; the link table and reconcile live beside it.
import type { Logger } from 'pino';
import { Listeners, SampledLog, type Clock, type TimerHandle } from '@pixelfleet/common';
import type { IdSource } from '../lib/ids';
import { generateSecret, sha256Hex } from '../lib/secrets';
import { DomainError, invalid, notFound } from '../errors';
import type { EventLog } from '../events/event-log';
import type { WorkerCommandRecord, WorkerRecord, WorkersRepository } from '../repositories/workers';
import { nextWorkerLink, WORKER_LOST_GRACE_MS, workerStatus, type WorkerLink, type WorkerLinkEvent } from './worker-link';
import { takeoverVerdict } from './stream-takeover';
import { decodeStoredCommand, encodeStoredCommand, isRegionCode, REGION_CODES, type AgentAck, type AgentCommand, type AgentHello, type AgentSessionEvent, type SessionActivity, type SignalEnvelope, type ToAgent } from '@pixelfleet/proto';

export const MAX_SLOTS = 64;
/**
 * A Hello may list at most this many running sessions per declared slot. A worker runs at most
 * `slots` apps; twice that leaves room for apps still stopping. A longer list is a protocol error
 * (a rogue agent's 50,000 made-up sessions froze the event loop for seconds per Hello).
 */
export const MAX_RUNNING_SESSIONS_PER_SLOT = 2;
/** Longest agent version kept, in characters (an agent says what it likes). */
export const MAX_AGENT_VERSION_CHARS = 64;
/** Longest ack error code and error message kept, in characters. */
export const MAX_ACK_ERROR_CODE_CHARS = 64;
export const MAX_ACK_ERROR_MESSAGE_CHARS = 1024;
/** Longest command id of an unknown ack that is logged (ours are short; an agent may send anything). */
export const MAX_LOGGED_COMMAND_ID_CHARS = 64;
/** Longest host name and agent instance id kept from a Hello, in characters (the agent's own words, repeated to operators). */
export const MAX_HELLO_HOSTNAME_CHARS = 253;
export const MAX_HELLO_INSTANCE_ID_CHARS = 64;
/** Refused agent instances remembered so that each is a fleet event once (the oldest are forgotten first). */
const MAX_REMEMBERED_REFUSALS = 1_000;

/** The control plane's end of one agent Connect stream. */
export interface AgentStream {
  /** The address it came from (grpc-js `getPeer()`, `host:port`), named when two agents present one identity. */
  readonly peer?: string;
  send(message: ToAgent): void;
  /** Ends the stream from our side (replaced by a newer one, or shutdown). */
  end(reason: string): void;
}

/** What the rest of the control plane hears from the fleet: event → its listeners' arguments. */
export type RegistryEvents = {
  /** After a Hello is accepted (Welcome sent): reconcile sessions against what the agent runs. */
  helloAccepted: [workerId: string, hello: AgentHello];
  commandFinished: [workerId: string, command: AgentCommand, ack: AgentAck];
  sessionEvent: [workerId: string, event: AgentSessionEvent];
  signal: [workerId: string, signal: SignalEnvelope];
  linkChanged: [workerId: string, link: WorkerLink];
  drainChanged: [workerId: string, draining: boolean];
  /** Viewer input per session, from each heartbeat. */
  sessionActivity: [workerId: string, activity: readonly SessionActivity[]];
  /** A Hello was refused: another agent process holds the worker's identity (every refusal, unsampled). */
  identityConflict: [workerId: string];
};

export interface WorkerView extends WorkerRecord {
  /** `removed` only in the answer to the removal itself. */
  status: WorkerLink | 'draining' | 'removed';
  usedSlots: number;
}

interface LiveStream {
  epoch: number;
  /** The most sessions its Hello allows it to run (slots × MAX_RUNNING_SESSIONS_PER_SLOT): a heartbeat reports no more. */
  maxRunning: number;
  stream: AgentStream;
  /** Who sent its Hello, and when it was accepted (ms since the epoch), for an identity conflict's message. */
  agent: HelloAgent;
  since: number;
}

/** The agent behind a Hello, as it describes itself (cut to the MAX_HELLO_* lengths). */
interface HelloAgent {
  hostname: string;
  instanceId: string;
  peer: string | undefined;
}

export interface WorkerRegistryOptions {
  heartbeatIntervalMs: number;
  leaseTtlMs: number;
  /** How long an unreachable worker is waited for, from its lease's end (default WORKER_LOST_GRACE_MS). */
  lostGraceMs?: number;
  /** How often leases are checked; defaults to a quarter of the heartbeat interval. */
  sweepIntervalMs?: number;
}

export class WorkerRegistry {
  private readonly live = new Map<string, LiveStream>();
  private readonly listeners: Listeners<RegistryEvents>;
  private sweeper: TimerHandle | undefined;
  /** Warn lines an agent can cause at will (acks for commands it was not sent), sampled per worker. */
  private readonly agentWarnings: SampledLog;
  /** `workerId/instanceId` of agents refused for an identity conflict, so each is one fleet event (not one per redial). */
  private readonly refusedInstances = new Set<string>();

  constructor(
    private readonly repo: WorkersRepository,
    private readonly events: EventLog,
    private readonly clock: Clock,
    private readonly ids: IdSource,
    private readonly log: Logger,
    private readonly options: WorkerRegistryOptions,
  ) {
    this.listeners = new Listeners((event, err) => this.log.error({ err, event }, 'registry listener threw'));
    this.agentWarnings = new SampledLog(clock, log);
  }

  /** Adds a listener; returns its unsubscribe function. A throwing listener is logged and skipped. */
  on<K extends keyof RegistryEvents>(event: K, listener: (...args: RegistryEvents[K]) => void): () => void {
    return this.listeners.on(event, listener);
  }

  /** Starts the lease sweeper. */
  start(): void {
    this.sweeper ??= this.clock.setInterval(() => this.sweepLeases(), this.options.sweepIntervalMs ?? Math.max(250, this.options.heartbeatIntervalMs / 4));
  }

  /** Stops the sweeper and ends every live stream. Idempotent. */
  close(): void {
    this.sweeper?.cancel();
    this.sweeper = undefined;
    for (const [, l] of this.live) l.stream.end('control plane shutting down');
    this.live.clear();
  }

  enroll(req: { hostname: string; region: string; slots: number; agentVersion: string }): { workerId: string; workerToken: string } {
    const hostname = req.hostname.trim();
    if (hostname.length === 0 || hostname.length > 253) throw invalid('hostname must be 1 to 253 characters');
    if (!isRegionCode(req.region)) throw invalid(`region "${req.region}" is not one of ${REGION_CODES.join(', ')}`);
    if (!Number.isInteger(req.slots) || req.slots < 1 || req.slots > MAX_SLOTS) throw invalid(`slots must be 1 to ${MAX_SLOTS}`);
    const workerId = this.ids.next('wrk');
    const workerToken = generateSecret('pfw');
    this.repo.insert(
      {
        workerId,
        hostname,
        region: req.region,
        slots: req.slots,
        agentVersion: req.agentVersion.slice(0, MAX_AGENT_VERSION_CHARS),
        link: 'disconnected',
        draining: false,
        connectionEpoch: 0,
        lastAckedSeq: 0,
        lastSeenAt: undefined,
        leaseExpiresAt: undefined,
        enrolledAt: this.clock.now(),
      },
      sha256Hex(workerToken),
    );
    this.events.record('worker.enrolled', { workerId }, { hostname, region: req.region, slots: req.slots });
    this.log.info({ workerId, hostname, region: req.region }, 'worker enrolled');
    return { workerId, workerToken };
  }

  /**
   * The worker a token belongs to. The token is looked up by its SHA-256: a 256-bit random
   * secret's digest reveals nothing useful through timing, and no plain token is stored.
   */
  authenticate(workerToken: string): string | undefined {
    return this.repo.findIdByTokenHash(sha256Hex(workerToken));
  }

  /**
   * Accepts a Hello on a new stream: replaces any older stream of the worker, starts a new
   * epoch, renews the lease, sends Welcome, lets listeners reconcile, and resends every
   * unfinished command. Returns the new epoch. A Hello from another agent process while the
   * worker's stream holds its lease is refused instead (a `conflict`, naming both hosts), and that
   * stream is left alone: see stream-takeover.ts.
   */
  acceptHello(authenticatedWorkerId: string, hello: AgentHello, stream: AgentStream): number {
    if (hello.workerId !== authenticatedWorkerId) {
      throw new DomainError('forbidden', `Hello names worker ${hello.workerId || '(none)'} but the token belongs to another worker`);
    }
    const worker = this.requireWorker(authenticatedWorkerId);
    if (!isRegionCode(hello.region)) throw invalid(`region "${hello.region}" is not one of ${REGION_CODES.join(', ')}`);
    // A worker is what it enrolled as (issue 22): a region named in a Hello moves nothing, or one
    // agent could walk through the regions collecting every live build and their viewers.
    if (hello.region !== worker.region) {
      this.log.warn({ workerId: worker.workerId, enrolledRegion: worker.region, helloRegion: hello.region }, 'Hello refused: the worker names another region than it enrolled in');
      throw new DomainError(
        'precondition',
        `worker ${worker.workerId} serves region ${worker.region} and cannot move to ${hello.region} by itself: set the agent's region to ${worker.region}, move the worker (pixelfleet admin worker move), or re-enroll it (stop the agent, delete worker.json from its data folder, start it)`,
      );
    }
    if (!Number.isInteger(hello.slots) || hello.slots < 1 || hello.slots > MAX_SLOTS) throw invalid(`slots must be 1 to ${MAX_SLOTS}`);
    const maxRunning = hello.slots * MAX_RUNNING_SESSIONS_PER_SLOT;
    if (hello.runningSessions.length > maxRunning) {
      this.log.warn({ workerId: worker.workerId, runningSessions: hello.runningSessions.length, maxRunning }, 'Hello refused: too many running sessions');
      throw invalid(`runningSessions lists ${hello.runningSessions.length} sessions; at most ${maxRunning} (${MAX_RUNNING_SESSIONS_PER_SLOT} per slot) are accepted`);
    }
    const agentVersion = hello.agentVersion.slice(0, MAX_AGENT_VERSION_CHARS);
    const agent: HelloAgent = { hostname: reported(hello.hostname, MAX_HELLO_HOSTNAME_CHARS), instanceId: reported(hello.instanceId, MAX_HELLO_INSTANCE_ID_CHARS), peer: stream.peer };

    const now = this.clock.now();
    const previous = this.live.get(worker.workerId);
    let replacedWhy = 'replaced by a newer stream from the same worker';
    if (previous !== undefined) {
      const verdict = takeoverVerdict(previous.agent, agent, worker.leaseExpiresAt, now);
      if (!verdict.replace) this.refuseSecondAgent(worker.workerId, previous, agent);
      if (verdict.reason === 'quietIncumbent') {
        replacedWhy = `replaced by another agent process presenting this worker's identity (${describeAgent(agent)}) after this stream let the lease run out`;
        this.log.info({ workerId: worker.workerId, replacedHost: previous.agent.hostname, replacedInstanceId: previous.agent.instanceId, hostname: agent.hostname, instanceId: agent.instanceId }, 'worker taken over by another agent process after its stream went quiet');
      }
    }
    const epoch = Math.max(worker.connectionEpoch, previous?.epoch ?? 0) + 1;
    this.live.set(worker.workerId, { epoch, stream, maxRunning, agent, since: now });
    previous?.stream.end(replacedWhy);

    this.repo.recordHello({
      workerId: worker.workerId,
      epoch,
      slots: hello.slots,
      agentVersion,
      lastAckedSeq: hello.lastAckedSeq,
      nowMs: now,
      leaseExpiresAt: now + this.options.leaseTtlMs,
    });
    this.applyLink(worker.workerId, worker.link, 'hello', { epoch, agentVersion, runningSessions: hello.runningSessions.length });
    stream.send({
      type: 'welcome',
      connectionEpoch: epoch,
      heartbeatIntervalMs: this.options.heartbeatIntervalMs,
      leaseTtlMs: this.options.leaseTtlMs,
      serverTimeMs: now,
      draining: worker.draining,
    });
    this.listeners.emit('helloAccepted', worker.workerId, hello);
    this.resendUnfinished(worker.workerId, epoch, stream);
    return epoch;
  }

  /**
   * A second agent presents the identity of a worker whose stream is alive: refused, the live
   * stream untouched. Logged sampled per worker, one fleet event per refused process, every refusal
   * counted (`identityConflict`). @throws DomainError `conflict` naming both hosts.
   */
  private refuseSecondAgent(workerId: string, holder: LiveStream, refused: HelloAgent): never {
    const fields = {
      workerId,
      connectedHost: holder.agent.hostname,
      connectedPeer: holder.agent.peer,
      connectedInstanceId: holder.agent.instanceId,
      refusedHost: refused.hostname,
      refusedPeer: refused.peer,
      refusedInstanceId: refused.instanceId,
    };
    this.agentWarnings.for(workerId).warn(fields, 'Hello refused: another agent process presents this worker identity while its stream is alive');
    const key = `${workerId}/${refused.instanceId}`;
    if (!this.refusedInstances.has(key)) {
      if (this.refusedInstances.size >= MAX_REMEMBERED_REFUSALS) this.refusedInstances.delete(this.refusedInstances.values().next().value!);
      this.refusedInstances.add(key);
      const { workerId: _about, ...data } = fields;
      this.events.record('worker.identityConflict', { workerId }, data);
    }
    this.listeners.emit('identityConflict', workerId);
    throw new DomainError(
      'conflict',
      `worker ${workerId} is already connected from ${describeAgent(holder.agent, new Date(holder.since).toISOString())}; this agent on ${describeAgent(refused)} presents the same identity (a copy of its worker.json): re-enroll one of them (stop its agent, delete worker.json from its data folder, start it with joinToken)`,
    );
  }

  /** Renews the lease; messages from a replaced stream are ignored. */
  heartbeat(workerId: string, epoch: number, activity: readonly SessionActivity[] = []): void {
    if (!this.isCurrent(workerId, epoch)) return;
    const maxRunning = this.live.get(workerId)?.maxRunning ?? 0;
    if (activity.length > maxRunning) {
      this.agentWarnings.for(workerId).warn({ workerId, listed: activity.length, maxRunning }, 'heartbeat lists more sessions than the worker may run; the rest are ignored');
    }
    const reported = activity.length > maxRunning ? activity.slice(0, maxRunning) : activity;
    if (reported.length > 0) this.listeners.emit('sessionActivity', workerId, reported);
    const now = this.clock.now();
    // One statement per heartbeat: the renewal returns the link state it found.
    const link = this.repo.renewLease(workerId, now, now + this.options.leaseTtlMs);
    if (link !== undefined && link !== 'connected') this.applyLink(workerId, link, 'heartbeat', { epoch });
  }

  /** The stream of that epoch closed. A replaced stream's close changes nothing. */
  streamClosed(workerId: string, epoch: number): void {
    if (!this.isCurrent(workerId, epoch)) return;
    this.live.delete(workerId);
    const worker = this.repo.findById(workerId);
    if (worker) this.applyLink(workerId, worker.link, 'streamClosed', { epoch });
  }

  /** Marks workers whose lease ran out as unreachable. Runs on the sweeper's interval. */
  sweepLeases(): void {
    for (const w of this.repo.listLeaseExpired(this.clock.now())) {
      this.applyLink(w.workerId, w.link, 'leaseExpired', { leaseExpiredAt: w.leaseExpiresAt });
    }
  }

  ack(workerId: string, epoch: number, received: AgentAck): void {
    if (!this.isCurrent(workerId, epoch)) return;
    // The agent's texts are cut before they are stored, logged or handed on.
    const ack: AgentAck = {
      ...received,
      errorCode: received.errorCode.slice(0, MAX_ACK_ERROR_CODE_CHARS),
      errorMessage: received.errorMessage.slice(0, MAX_ACK_ERROR_MESSAGE_CHARS),
    };
    const command = this.repo.findCommand(ack.commandId);
    if (!command || command.workerId !== workerId || command.seq !== ack.seq) {
      this.agentWarnings.for(workerId).warn({ workerId, commandId: ack.commandId.slice(0, MAX_LOGGED_COMMAND_ID_CHARS), seq: ack.seq }, 'ack for a command this worker was not sent; ignored');
      return;
    }
    if (command.phase === 'SUCCEEDED' || command.phase === 'FAILED') return; // a repeated final ack
    this.repo.setCommandPhase(ack.commandId, ack.phase, ack.errorCode || undefined, ack.errorMessage || undefined, this.clock.now());
    if (ack.phase === 'SUCCEEDED' || ack.phase === 'FAILED') {
      this.repo.setLastAckedSeq(workerId, ack.seq);
      const domain = decodeStoredCommand(command.payload);
      if (ack.phase === 'FAILED') this.log.warn({ workerId, commandId: ack.commandId, kind: command.kind, errorCode: ack.errorCode }, 'command failed');
      this.listeners.emit('commandFinished', workerId, domain, ack);
    }
  }

  sessionEvent(workerId: string, epoch: number, event: AgentSessionEvent): void {
    if (!this.isCurrent(workerId, epoch)) return;
    this.listeners.emit('sessionEvent', workerId, event);
  }

  signalFromAgent(workerId: string, epoch: number, signal: SignalEnvelope): void {
    if (!this.isCurrent(workerId, epoch)) return;
    this.listeners.emit('signal', workerId, signal);
  }

  /** Relays a viewer's signalling message to the worker; false when its stream is down. */
  signalToAgent(workerId: string, signal: SignalEnvelope): boolean {
    const live = this.live.get(workerId);
    if (!live) return false;
    live.stream.send({ type: 'signal', signal });
    return true;
  }

  /**
   * Sessions with a startSession or stopSession command to this worker that has not finished. A
   * stored command that no longer decodes is failed on the way and counts as neither.
   */
  pendingSessionCommands(workerId: string): { starts: Set<string>; stops: Set<string> } {
    const starts = new Set<string>();
    const stops = new Set<string>();
    for (const { command } of this.unfinished(workerId)) {
      if (command.kind === 'startSession') starts.add(command.sessionId);
      else if (command.kind === 'stopSession') stops.add(command.sessionId);
    }
    return { starts, stops };
  }

  /** Stores a command and sends it now if the worker is connected; it is resent on every Hello until finished. */
  sendCommand(workerId: string, command: AgentCommand, options: { ttlMs?: number } = {}): WorkerCommandRecord {
    this.requireWorker(workerId);
    const now = this.clock.now();
    const record = this.repo.enqueueCommand({
      workerId,
      commandId: this.ids.next('cmd'),
      kind: command.kind,
      payload: encodeStoredCommand(command),
      notAfter: options.ttlMs === undefined ? undefined : now + options.ttlMs,
      nowMs: now,
    });
    const live = this.live.get(workerId);
    if (live) this.deliver(record, command, live.epoch, live.stream);
    return record;
  }

  drain(workerId: string): WorkerView {
    return this.setDraining(workerId, true);
  }

  /**
   * An operator's move (a worker never moves by itself, see acceptHello): the worker serves
   * `region` from now on. Its stream ends, so that its agent comes back with a Hello, accepted
   * once the agent's own `region` names the new one; that Hello catches up on the new region's
   * builds (build distribution). The caller ends the worker's sessions first.
   */
  move(workerId: string, region: string): WorkerView {
    if (!isRegionCode(region)) throw invalid(`region "${region}" is not one of ${REGION_CODES.join(', ')}`);
    const worker = this.requireWorker(workerId);
    if (worker.region === region) return this.get(workerId);
    this.repo.setRegion(workerId, region);
    this.events.record('worker.moved', { workerId }, { from: worker.region, to: region });
    this.log.info({ workerId, from: worker.region, to: region }, 'worker moved to another region by an operator');
    this.endLiveStream(workerId, `the worker was moved to region ${region} by an operator: set the agent's region to ${region}`);
    return this.get(workerId);
  }

  /**
   * An operator's removal: the worker's token stops working at once (its row goes, and with it its
   * queued commands and build copies), its stream ends, and it is listed no more. Its agent must
   * enroll again to come back. The caller ends the worker's sessions first.
   */
  remove(workerId: string): WorkerView {
    const view = this.get(workerId);
    this.repo.remove(workerId);
    this.events.record('worker.removed', { workerId }, { hostname: view.hostname, region: view.region });
    this.log.info({ workerId, hostname: view.hostname, region: view.region }, 'worker removed by an operator');
    this.endLiveStream(workerId, 'the worker was removed by an operator');
    return { ...view, status: 'removed' };
  }

  /** Ends the worker's stream, if it has one; its close then changes nothing (no longer current). */
  private endLiveStream(workerId: string, reason: string): void {
    const live = this.live.get(workerId);
    if (live === undefined) return;
    this.live.delete(workerId);
    live.stream.end(reason);
  }

  undrain(workerId: string): WorkerView {
    return this.setDraining(workerId, false);
  }

  list(): WorkerView[] {
    return this.repo.listWithUsedSlots().map((w) => ({ ...w, status: workerStatus(w.link, w.draining) }));
  }

  get(workerId: string): WorkerView {
    return this.view(this.requireWorker(workerId));
  }

  /** Workers that may take a new session: connected, not draining, in the region. */
  placeable(region: string): WorkerView[] {
    return this.list().filter((w) => w.region === region && w.link === 'connected' && !w.draining && this.live.has(w.workerId));
  }

  /**
   * True when the region has a worker that could take sessions now or after a short outage: not
   * draining, and connected, disconnected within its lease, or unreachable for less than the
   * grace its sessions get (lostGraceMs from its lease's end).
   */
  hasServiceableWorker(region: string): boolean {
    const now = this.clock.now();
    return this.repo
      .list()
      .some((w) => w.region === region && !w.draining && (w.link !== 'unreachable' || (w.leaseExpiresAt ?? 0) + this.lostGraceMs > now));
  }

  /** How long an unreachable worker is waited for, from its lease's end. */
  get lostGraceMs(): number {
    return this.options.lostGraceMs ?? WORKER_LOST_GRACE_MS;
  }

  liveStreamCount(): number {
    return this.live.size;
  }

  private setDraining(workerId: string, draining: boolean): WorkerView {
    const worker = this.requireWorker(workerId);
    if (worker.draining !== draining) {
      this.repo.setDraining(workerId, draining);
      this.events.record(draining ? 'worker.drained' : 'worker.undrained', { workerId });
      this.log.info({ workerId, draining }, draining ? 'worker drained' : 'worker undrained');
      this.live.get(workerId)?.stream.send({ type: 'drainNotice', draining });
      this.listeners.emit('drainChanged', workerId, draining);
    }
    return this.get(workerId);
  }

  private applyLink(workerId: string, from: WorkerLink, event: WorkerLinkEvent, data: Record<string, unknown>): void {
    const t = nextWorkerLink(from, event);
    if (!t) return;
    if (t.next !== from) this.repo.setLink(workerId, t.next);
    // Every Hello is worth recording (a reconnect); other self-transitions are not.
    if (t.next !== from || event === 'hello') {
      this.events.record(t.fires, { workerId }, data);
      this.log.info({ workerId, from, to: t.next, event }, 'worker link changed');
      this.listeners.emit('linkChanged', workerId, t.next);
    }
  }

  private resendUnfinished(workerId: string, epoch: number, stream: AgentStream): void {
    const now = this.clock.now();
    for (const { record: c, command } of this.unfinished(workerId)) {
      if (c.notAfter !== undefined && c.notAfter < now) {
        this.repo.setCommandPhase(c.commandId, 'FAILED', 'STALE', 'not delivered before its deadline', now);
        this.listeners.emit('commandFinished', workerId, command, {
          seq: c.seq, commandId: c.commandId, phase: 'FAILED', errorCode: 'STALE', errorMessage: 'not delivered before its deadline', progressPercent: 0,
        });
        continue;
      }
      this.deliver(c, command, epoch, stream);
    }
  }

  /**
   * The worker's unfinished commands, read back through the contract. A row that no longer decodes
   * (written by a version this one cannot read, or damaged) cannot be sent: it is failed with the
   * reason, once, instead of breaking every Hello of the worker.
   */
  private unfinished(workerId: string): { record: WorkerCommandRecord; command: AgentCommand }[] {
    const commands: { record: WorkerCommandRecord; command: AgentCommand }[] = [];
    for (const record of this.repo.unfinishedCommands(workerId)) {
      try {
        commands.push({ record, command: decodeStoredCommand(record.payload) });
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        this.log.error({ workerId, commandId: record.commandId, kind: record.kind, reason }, 'stored command does not decode; failed');
        this.repo.setCommandPhase(record.commandId, 'FAILED', 'UNDECODABLE', reason.slice(0, MAX_ACK_ERROR_MESSAGE_CHARS), this.clock.now());
      }
    }
    return commands;
  }

  private deliver(c: WorkerCommandRecord, command: AgentCommand, epoch: number, stream: AgentStream): void {
    stream.send({ type: 'command', seq: c.seq, commandId: c.commandId, connectionEpoch: epoch, notAfterMs: c.notAfter, command });
  }

  private isCurrent(workerId: string, epoch: number): boolean {
    return this.live.get(workerId)?.epoch === epoch;
  }

  private requireWorker(workerId: string): WorkerRecord {
    const w = this.repo.findById(workerId);
    if (!w) throw notFound(`worker ${workerId} not found`);
    return w;
  }

  private view(w: WorkerRecord): WorkerView {
    return { ...w, status: workerStatus(w.link, w.draining), usedSlots: this.repo.usedSlots(w.workerId) };
  }
}

/** An agent's own words, cut to max characters, control characters shown as `?` (they reach operators' logs and messages). */
function reported(text: string, max: number): string {
  return text.slice(0, max).replace(/\p{Cc}/gu, '?');
}

/** `host gpu-1 (address 10.0.0.5:50123, agent instance 3f2a…, since …)`, for an identity conflict's message. */
function describeAgent(agent: HelloAgent, since?: string): string {
  const details = [
    agent.peer === undefined ? undefined : `address ${agent.peer}`,
    agent.instanceId === '' ? 'an agent too old to name its instance' : `agent instance ${agent.instanceId}`,
    since === undefined ? undefined : `since ${since}`,
  ].filter((d) => d !== undefined);
  return `host ${agent.hostname === '' ? '(not named)' : agent.hostname} (${details.join(', ')})`;
}
