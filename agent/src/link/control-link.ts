// The agent's link to the control plane: Enroll once, then keep one Connect stream open —
// Hello with full state on every (re)connect, heartbeats at the interval the Welcome names,
// commands to the executor — and redial with full-jitter backoff on any failure (a control
// plane restart arrives as CANCELLED, a dead network as UNAVAILABLE). Session events and relayed
// signals that find the link down wait in a SessionOutbox and follow the next Welcome. A refusal
// that only the operator can end (a token the control plane does not know; another agent process
// holding this worker identity, ALREADY_EXISTS; a Hello refused for what it says, FAILED_PRECONDITION
// or INVALID_ARGUMENT) is an error line and a redial at the longest backoff.
import { Metadata, status, type ClientDuplexStream, type ServiceError } from '@grpc/grpc-js';
import type { Logger } from 'pino';
import { AgentContractError, agentV1, fromAgentToProto, helloToProto, toAgentFromProto, type AgentAck, type AgentHello, type AgentSessionEvent, type DeliveredCommand, type Heartbeat, type SignalEnvelope, type ToAgent } from '@pixelfleet/proto';
import { clientChannel, type ClientTlsSettings, systemClock, type Clock, type TimerHandle, backoffDelayMs, type BackoffOptions } from '@pixelfleet/common';
import { SessionOutbox, type OutboxMessage } from './session-outbox';

/** A healthy stream this long resets the backoff to its first step. */
export const BACKOFF_RESET_AFTER_MS = 60_000;
/** Deadline of the Enroll call. */
export const ENROLL_TIMEOUT_MS = 15_000;

export const CLIENT_OPTIONS = {
  'grpc.keepalive_time_ms': 20_000,
  'grpc.keepalive_timeout_ms': 10_000,
  'grpc.keepalive_permit_without_calls': 1,
  'grpc.initial_reconnect_backoff_ms': 1_000,
  'grpc.max_reconnect_backoff_ms': 30_000,
} as const;

export class EnrollRefusedError extends Error {
  override readonly name = 'EnrollRefusedError';
}

/** The agent config's names of the TLS settings, for messages. */
export const AGENT_TLS_KEYS = { caFile: 'tls.caFile', serverName: 'tls.serverName', certFile: 'tls.certFile', keyFile: 'tls.keyFile' } as const;

/**
 * The AgentService client: TLS per the config's `tls` (see ClientTlsSettings). Throws TlsFileError
 * naming the key when a TLS file cannot be read.
 */
export function createAgentClient(address: string, tls: ClientTlsSettings = {}): agentV1.AgentServiceClient {
  const channel = clientChannel(address, tls, AGENT_TLS_KEYS);
  return new agentV1.AgentServiceClient(address, channel.credentials, { ...CLIENT_OPTIONS, ...channel.options });
}

function bearer(token: string, waitForReady: boolean): Metadata {
  const md = new Metadata({ waitForReady });
  md.set('authorization', `Bearer ${token}`);
  return md;
}

/** Trades the join token for a worker identity. UNAUTHENTICATED and INVALID_ARGUMENT are final. */
export function enroll(
  client: agentV1.AgentServiceClient,
  joinToken: string,
  request: agentV1.EnrollRequest,
): Promise<agentV1.EnrollResponse> {
  return new Promise((resolve, reject) => {
    client.enroll(request, bearer(joinToken, true), { deadline: new Date(Date.now() + ENROLL_TIMEOUT_MS) }, (err, res) => {
      if (err) {
        if (err.code === status.UNAUTHENTICATED || err.code === status.INVALID_ARGUMENT || err.code === status.PERMISSION_DENIED) {
          reject(new EnrollRefusedError(`the control plane refused enrollment: ${err.details}`));
        } else reject(err);
      } else resolve(res);
    });
  });
}

export interface ControlLinkOptions {
  client: agentV1.AgentServiceClient;
  workerToken: string;
  /** Current state for each Hello. */
  helloState: () => AgentHello;
  /** Load and per-session activity for each heartbeat (sentAtMs is the clock's now). */
  heartbeatState: () => Omit<Heartbeat, 'sentAtMs'>;
  onCommand: (command: DeliveredCommand) => void;
  onDrainChanged?: (draining: boolean) => void;
  /** A viewer's signalling message for one of this worker's sessions. */
  onSignal?: (signal: SignalEnvelope) => void;
  /**
   * After each Welcome, once what the outbox held has been sent: what the control plane cannot
   * know after a restart of its own is told again here (the agent re-announces its identified apps).
   */
  onConnected?: () => void;
  /**
   * The control plane refused the stream because another agent process presents this worker
   * identity and its stream is alive (ALREADY_EXISTS); details is its message, naming both hosts.
   */
  onIdentityRefused?: (details: string) => void;
  backoff: BackoffOptions;
  log: Logger;
  /** Time source of the heartbeat interval, the redial wait and the healthy-stream measure (default systemClock). */
  clock?: Clock;
}

export type LinkState = 'connecting' | 'connected' | 'waiting' | 'closed';

export class ControlLink {
  private call: ClientDuplexStream<agentV1.ConnectRequest, agentV1.ConnectResponse> | undefined;
  private epoch: number | undefined;
  private heartbeat: TimerHandle | undefined;
  private retryTimer: TimerHandle | undefined;
  private readonly clock: Clock;
  private wakeRetry: (() => void) | undefined;
  private loop: Promise<void> | undefined;
  private state: LinkState = 'connecting';
  private readonly listeners = new Set<(state: LinkState, epoch: number | undefined) => void>();
  private readonly outbox: SessionOutbox;
  /** Streams opened so far (the first is 1); for diagnostics and tests. */
  connects = 0;

  constructor(private readonly options: ControlLinkOptions) {
    this.clock = options.clock ?? systemClock;
    this.outbox = new SessionOutbox(options.log);
  }

  /** Session messages waiting for the link to come back. */
  get heldMessages(): number {
    return this.outbox.size;
  }

  get linkState(): LinkState {
    return this.state;
  }

  get connectionEpoch(): number | undefined {
    return this.epoch;
  }

  /** Calls listener on every state change; returns the unsubscribe function. */
  onStateChange(listener: (state: LinkState, epoch: number | undefined) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Sends an ack on the current stream; dropped while disconnected (the journal answers on redelivery). */
  sendAck(ack: AgentAck): void {
    this.write(fromAgentToProto({ type: 'ack', ack }));
  }

  /**
   * Reports a session event: true when written on the current stream, false when the link is down
   * and the event waits in the outbox for the next Welcome (a session mid-negotiation must not lose
   * `appIdentified` or `viewerConnected` to a control plane restart). One written into a stream
   * that is dying unseen is lost; the next Hello's running sessions reconcile what that leaves.
   */
  sendSessionEvent(event: AgentSessionEvent): boolean {
    return this.sendOrHold({ type: 'sessionEvent', event });
  }

  /** Relays a signalling message toward a viewer; held like a session event while the link is down. */
  sendSignal(signal: SignalEnvelope): boolean {
    return this.sendOrHold({ type: 'signal', signal });
  }

  /** Ends the stream and stops redialing. Idempotent. */
  async close(): Promise<void> {
    this.setState('closed');
    this.retryTimer?.cancel();
    this.wakeRetry?.();
    this.stopHeartbeat();
    this.call?.cancel();
    await this.loop;
  }

  /** A method, not a field read, so TypeScript does not narrow it away across awaits. */
  private isClosed(): boolean {
    return this.state === 'closed';
  }

  private sendOrHold(message: OutboxMessage): boolean {
    if (this.write(fromAgentToProto(message))) return true;
    if (!this.isClosed()) this.outbox.hold(message);
    return false;
  }

  /** Sends what waited for this stream, each session's messages in order, then lets the agent re-announce. */
  private flushOutbox(): void {
    const held = this.outbox.drain();
    for (const message of held) this.write(fromAgentToProto(message));
    if (held.length > 0) this.options.log.info({ messages: held.length }, 'sent the session messages held while the control link was down');
    this.options.onConnected?.();
  }

  private write(message: agentV1.ConnectRequest): boolean {
    if (this.state !== 'connected' || !this.call) return false;
    this.call.write(message);
    return true;
  }

  private async run(): Promise<void> {
    let attempt = 0;
    while (!this.isClosed()) {
      const result = await this.connectOnce();
      if (this.isClosed()) break;
      if (result.healthyMs >= BACKOFF_RESET_AFTER_MS) attempt = 0;
      const unauthenticated = result.code === status.UNAUTHENTICATED || result.code === status.PERMISSION_DENIED;
      // Refused while another process holds this identity: asked again only at the longest backoff
      // (one error line each time), which is also about when a dead holder's lease has run out.
      const identityTaken = result.code === status.ALREADY_EXISTS;
      // Refused for what this agent says of itself (a region other than its worker's, slots out of
      // range, too many running sessions): the next Hello says the same until someone acts.
      const helloRefused = result.code === status.FAILED_PRECONDITION || result.code === status.INVALID_ARGUMENT;
      const delay = unauthenticated || identityTaken || helloRefused ? this.options.backoff.maxMs : backoffDelayMs(attempt, this.options.backoff);
      attempt += 1;
      const logFields = { code: status[result.code] ?? result.code, details: result.details, retryInMs: delay };
      if (unauthenticated) this.options.log.error(logFields, 'control plane rejected the worker token; fix the credentials or re-enroll');
      else if (helloRefused) this.options.log.error(logFields, "control plane refused this agent's Hello; fix what it says");
      else if (identityTaken) {
        this.options.log.error(logFields, 'another agent process presents this worker identity; this one waits until it stops: re-enroll one of them');
        this.options.onIdentityRefused?.(result.details);
      } else this.options.log.warn(logFields, 'control link lost; redialing');
      this.setState('waiting');
      await new Promise<void>((resolve) => {
        this.wakeRetry = resolve;
        this.retryTimer = this.clock.setTimeout(resolve, delay);
      });
      this.wakeRetry = undefined;
    }
  }

  /** One stream from dial to end; resolves with how it ended and how long it was healthy. */
  private connectOnce(): Promise<{ code: status; details: string; healthyMs: number }> {
    return new Promise((resolve) => {
      this.setState('connecting');
      const call = this.options.client.connect(bearer(this.options.workerToken, true));
      this.call = call;
      this.connects += 1;
      let welcomedAt: number | undefined;
      let settled = false;
      const settle = (code: status, details: string) => {
        if (settled) return;
        settled = true;
        this.stopHeartbeat();
        this.epoch = undefined;
        if (this.call === call) this.call = undefined;
        resolve({ code, details, healthyMs: welcomedAt === undefined ? 0 : this.clock.now() - welcomedAt });
      };

      call.on('data', (m: agentV1.ConnectResponse) => {
        if (m.msg === undefined) return;
        // A command from an older stream is ignored before it is decoded: it is not this stream's to fail.
        if (m.msg.$case === 'command' && m.msg.value.connectionEpoch !== this.epoch) {
          this.options.log.warn({ commandId: m.msg.value.commandId }, 'command from another stream epoch ignored');
          return;
        }
        let message: ToAgent;
        try {
          message = toAgentFromProto(m);
        } catch (err) {
          if (!(err instanceof AgentContractError)) throw err;
          // A command this version cannot decode (no kind, an unknown codec) is failed with the reason; nothing else is run.
          if (m.msg.$case === 'command') {
            this.sendAck({ seq: m.msg.value.seq, commandId: m.msg.value.commandId, phase: 'FAILED', errorCode: err.code, errorMessage: err.message, progressPercent: 0 });
          } else this.options.log.warn({ err: err.message }, 'message from the control plane not understood');
          return;
        }
        switch (message.type) {
          case 'welcome':
            welcomedAt = this.clock.now();
            this.epoch = message.connectionEpoch;
            this.setState('connected');
            this.options.log.info({ epoch: this.epoch, draining: message.draining }, 'connected to the control plane');
            this.startHeartbeat(message.heartbeatIntervalMs);
            this.options.onDrainChanged?.(message.draining);
            this.flushOutbox();
            break;
          case 'command': {
            const { type: _type, ...delivered } = message;
            this.options.onCommand(delivered);
            break;
          }
          case 'drainNotice':
            this.options.log.info({ draining: message.draining }, message.draining ? 'worker drained' : 'worker undrained');
            this.options.onDrainChanged?.(message.draining);
            break;
          case 'signal':
            this.options.onSignal?.(message.signal);
            break;
          default: {
            const unreachable: never = message;
            this.options.log.warn({ message: String(unreachable) }, 'unknown message from the control plane');
          }
        }
      });
      call.on('error', (err: ServiceError) => settle(err.code, err.details));
      call.on('end', () => settle(status.OK, 'stream ended by the control plane'));

      // The Hello goes first; the control plane answers with Welcome.
      call.write({ msg: { $case: 'hello', value: helloToProto(this.options.helloState()) } });
    });
  }

  private startHeartbeat(intervalMs: number): void {
    this.stopHeartbeat();
    this.heartbeat = this.clock.setInterval(
      () => this.write(fromAgentToProto({ type: 'heartbeat', sentAtMs: this.clock.now(), ...this.options.heartbeatState() })),
      Math.max(100, intervalMs),
    );
  }

  private stopHeartbeat(): void {
    this.heartbeat?.cancel();
    this.heartbeat = undefined;
  }

  private setState(state: LinkState): void {
    if (this.state === 'closed' || this.state === state) return;
    this.state = state;
    for (const l of this.listeners) l(state, this.epoch);
  }
}
