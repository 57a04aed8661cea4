// The player signalling gateway: one WebSocket per viewer at {share_url}/<projectId>/signalling,
// speaking Epic's player dialect (signaling's PlayerEndpoint) plus our pixelfleet* messages. It
// creates the viewer's session, tells it its place in line, and relays offer/answer/ICE between
// the browser and the session's agent over the agent's gRPC stream.
import type { WebSocket } from 'ws';
import type { Logger } from 'pino';
import { PlayerEndpoint, SignallingUsageError, type IceCandidateInit, type PeerConnectionOptions } from '@pixelfleet/signaling';
import type { ProjectsRepository } from '../repositories/projects';
import type { SessionRecord } from '../repositories/sessions';
import type { WorkerRegistry } from '../workers/registry';
import type { SessionService } from '../sessions/session-service';
import { SESSION_END, type SessionEndCause } from '../sessions/session-end';

/** Messages an agent's relay sends toward a viewer (JSON in SignalMessage). */
export type RelayToViewer =
  | { type: 'config'; peerConnectionOptions: PeerConnectionOptions }
  | { type: 'offer'; sdp: string }
  | { type: 'iceCandidate'; candidate: IceCandidateInit };

/** Parses what the agent relayed; undefined for anything a viewer must not receive. */
export function parseRelayToViewer(json: string): RelayToViewer | undefined {
  let value: unknown;
  try {
    value = JSON.parse(json) as unknown;
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const m = value as Record<string, unknown>;
  if (m.type === 'config' && typeof m.peerConnectionOptions === 'object' && m.peerConnectionOptions !== null) {
    const peerConnectionOptions: PeerConnectionOptions = m.peerConnectionOptions;
    return { type: 'config', peerConnectionOptions };
  }
  if (m.type === 'offer' && typeof m.sdp === 'string' && m.sdp.length > 0 && m.sdp.length <= 32_768) return { type: 'offer', sdp: m.sdp };
  if (m.type === 'iceCandidate' && typeof m.candidate === 'object' && m.candidate !== null) {
    const c = m.candidate as Record<string, unknown>;
    if (typeof c.candidate !== 'string' || c.candidate.length > 1024) return undefined;
    return {
      type: 'iceCandidate',
      candidate: {
        candidate: c.candidate,
        sdpMid: typeof c.sdpMid === 'string' ? c.sdpMid : null,
        sdpMLineIndex: typeof c.sdpMLineIndex === 'number' ? c.sdpMLineIndex : null,
      } as IceCandidateInit,
    };
  }
  return undefined;
}

interface Viewer {
  sessionId: string;
  projectId: string;
  endpoint: PlayerEndpoint;
  lastPosition: number | undefined;
}

export interface ViewerGatewayDeps {
  sessions: SessionService;
  projects: ProjectsRepository;
  registry: WorkerRegistry;
  /** Absolute URL the page posts telemetry to. */
  telemetryUrl: () => string;
  log: Logger;
}

export class ViewerGateway {
  private readonly viewers = new Map<string, Viewer>();

  constructor(private readonly deps: ViewerGatewayDeps) {
    deps.sessions.subscribe({
      queueChanged: (projectId) => this.sendPositions(projectId),
      placed: (s) => this.viewers.get(s.sessionId)?.endpoint.sendCustom({ type: 'pixelfleetStatus', status: 'starting' }),
      streamerReady: (s, streamerId) => this.viewers.get(s.sessionId)?.endpoint.setStreamerAvailable(streamerId),
      signal: (s, json) => this.relayToViewer(s, json),
      ended: (s, close) => {
        const viewer = this.viewers.get(s.sessionId);
        if (!viewer) return;
        this.viewers.delete(s.sessionId);
        viewer.endpoint.close(close.code, close.reason);
      },
    });
  }

  /** Number of connected viewers (waiting or watching). */
  get size(): number {
    return this.viewers.size;
  }

  /** Takes a new viewer socket (already open) for a project. */
  accept(socket: WebSocket, projectId: string): void {
    const endpoint = new PlayerEndpoint(socket, { peerConnectionOptions: 'deferred' });
    const refuse = (cause: SessionEndCause) => endpoint.close(SESSION_END[cause].close.code, SESSION_END[cause].close.reason);
    const project = this.deps.projects.findById(projectId);
    if (!project) return endpoint.close(4000, 'project not found');
    if (!project.enabled) return refuse('projectDisabled');
    if (project.liveUploadId === undefined) return refuse('appNotFound');
    if (!this.deps.registry.hasServiceableWorker(project.region)) return refuse('noWorker');

    const { session, viewerToken } = this.deps.sessions.create(project);
    const viewer: Viewer = { sessionId: session.sessionId, projectId, endpoint, lastPosition: undefined };
    this.viewers.set(session.sessionId, viewer);
    const log = this.deps.log.child({ sessionId: session.sessionId, projectId });
    endpoint.sendCustom({ type: 'pixelfleetSession', sessionId: session.sessionId, viewerToken, telemetryUrl: this.deps.telemetryUrl() });
    this.sendPosition(viewer);

    const toAgent = (message: Record<string, unknown>) => {
      if (!this.deps.sessions.signalToAgent(session.sessionId, JSON.stringify(message))) {
        log.debug({ type: message.type }, 'viewer signal not relayed: session has no live worker link');
      }
    };
    endpoint.on('subscribe', (streamerId) => toAgent({ type: 'subscribe', streamerId }));
    endpoint.on('unsubscribe', () => toAgent({ type: 'unsubscribe' }));
    endpoint.on('answer', (a) => toAgent({ type: 'answer', ...a }));
    endpoint.on('iceCandidate', (candidate) => toAgent({ type: 'iceCandidate', candidate }));
    endpoint.on('protocolError', (reason) => log.warn({ reason }, 'viewer signalling rejected'));
    endpoint.on('closed', (code, reason) => {
      if (this.viewers.get(session.sessionId) !== viewer) return; // we closed it because the session ended
      this.viewers.delete(session.sessionId);
      log.info({ code, reason }, 'viewer left');
      this.deps.sessions.end(session.sessionId, 'viewerLeft');
    });
  }

  /** Closes every viewer socket (shutdown); their sessions end as the viewers leave. */
  close(): void {
    for (const viewer of [...this.viewers.values()]) viewer.endpoint.close(1001, 'service restarting');
  }

  private relayToViewer(s: SessionRecord, json: string): void {
    const viewer = this.viewers.get(s.sessionId);
    if (!viewer) return;
    const message = parseRelayToViewer(json);
    if (!message) {
      this.deps.log.warn({ sessionId: s.sessionId }, 'agent sent a signal a viewer may not receive; dropped');
      return;
    }
    try {
      switch (message.type) {
        case 'config':
          viewer.endpoint.sendConfig(message.peerConnectionOptions);
          break;
        case 'offer':
          viewer.endpoint.sendOffer(message.sdp);
          break;
        case 'iceCandidate':
          viewer.endpoint.sendIceCandidate(message.candidate);
          break;
        default: {
          const unreachable: never = message;
          throw new Error(`unknown relay message ${String(unreachable)}`);
        }
      }
    } catch (err) {
      if (!(err instanceof SignallingUsageError)) throw err;
      this.deps.log.warn({ sessionId: s.sessionId, err: err.message }, 'relay signal out of order; dropped');
    }
  }

  private sendPositions(projectId: string): void {
    for (const sessionId of this.deps.sessions.queues.waiting(projectId)) {
      const viewer = this.viewers.get(sessionId);
      if (viewer) this.sendPosition(viewer);
    }
  }

  private sendPosition(viewer: Viewer): void {
    const position = this.deps.sessions.queues.position(viewer.projectId, viewer.sessionId);
    if (position === undefined || position === viewer.lastPosition) return;
    viewer.lastPosition = position;
    viewer.endpoint.sendCustom({ type: 'pixelfleetQueue', position, queueLength: this.deps.sessions.queues.length(viewer.projectId) });
  }
}
