// The viewer page, assembled: Epic's frontend library for signalling, WebRTC, video and input; our
// extension messages for queue and session; the status view; the iframe API; telemetry.

import { Config, LogLevel, Logger, PixelStreaming } from '@epicgames-ps/lib-pixelstreamingfrontend-ue5.7';
import { describeClose, type CloseDescription } from '../close-codes';
import { queueState, type UiInteractionData } from '../embed-messages';
import { ExtensionMessageError, PIXELFLEET_MESSAGE_TYPES, parseExtensionMessage, type PixelfleetExtensionMessage } from '../extension-messages';
import { TelemetryReporter, type EventDetails } from '../telemetry/reporter';
import { statsRow, type TelemetryEventName, type TelemetryStatsRow } from '../telemetry/rows';
import { clientDetails } from './client-details';
import { EmbedBridge } from './embed-bridge';
import { queryParametersMessage, signallingUrl, telemetryEndpoint } from './page-location';
import { PAGE_PING_INTERVAL_MS, SignallingResume, isLibraryTransport } from './signalling-resume';
import { browserTelemetryTransport } from './telemetry-transport';
import { UiInteractionQueue } from './ui-interaction-queue';
import { PlayerView } from './view';
import { canTransition, type ViewState } from './view-state';

/** A statistics row is recorded this often, in ms (the library samples every second). */
export const STATS_INTERVAL_MS = 5_000;

/** Name under which the page listens for the app's Response messages. */
const RESPONSE_LISTENER = 'pixelfleet-embed';

const WEBRTC_FAILED_SENTENCE = 'The video connection could not be established. Your network may block it.';

declare global {
  interface Window {
    /**
     * The page's live PixelStreaming object, where Epic's stock player puts it, so scripts and
     * tooling written for that page (console, automation) find it. Same-origin only: an embedding
     * page on another origin cannot reach it and uses the iframe API.
     */
    pixelStreaming?: PixelStreaming;
  }
}

export interface ViewerOptions {
  /** The page's `<main>` element (it carries `data-project-id`). */
  readonly root: HTMLElement;
  readonly window: Window;
  /** Clock; default `() => new Date()`. */
  readonly now?: () => Date;
}

export class Viewer {
  readonly projectId: string;
  private state: ViewState = { kind: 'opening' };
  private readonly view: PlayerView;
  private readonly stream: PixelStreaming;
  private readonly embed: EmbedBridge | undefined;
  private readonly uiInteractions: UiInteractionQueue;
  private readonly now: () => Date;
  private telemetry: TelemetryReporter | undefined;
  private latestStats: TelemetryStatsRow | undefined;
  private statsTimer: ReturnType<typeof setInterval> | undefined;
  private mediaFailed = false;
  /** The library got its `streamerList` (held by the server until the app is ready). */
  private streamerListed = false;
  private leaving = false;
  private readonly resume: SignallingResume | undefined;

  constructor(private readonly options: ViewerOptions) {
    const { root, window: win } = options;
    this.now = options.now ?? (() => new Date());
    this.projectId = root.dataset['projectId'] ?? '';
    this.view = new PlayerView(root, {
      onPlay: () => this.stream.play(),
      onToggleMute: () => this.toggleMute(),
      onRetry: () => win.location.reload(),
    });

    Logger.InitLogging(LogLevel.Warning, false); // the default logs every message at Debug with stacks
    const socketUrl = signallingUrl(win.location);
    const config = new Config({
      useUrlParams: false, // the query string must not be able to redirect signalling (`ss`)
      initialSettings: {
        AutoConnect: true,
        AutoPlayVideo: true,
        StartVideoMuted: true,
        HoveringMouse: true,
        MatchViewportRes: false,
        ss: socketUrl,
        WaitForStreamer: true,
        MaxReconnectAttempts: 0,
        TimeoutIfIdle: false, // the server enforces afkTimeout
        KeepaliveDelay: PAGE_PING_INTERVAL_MS, // its pongs are what the resume's silence watch listens for
        SuppressBrowserKeys: true,
      },
    });
    // AutoConnect opens the socket inside this constructor; its events arrive on later tasks, so the
    // listeners below are in place before the first message.
    this.stream = new PixelStreaming(config, { videoElementParent: this.view.videoParent });
    win.pixelStreaming = this.stream;
    const transport: unknown = this.stream.signallingProtocol.transport;
    if (isLibraryTransport(transport)) {
      this.resume = new SignallingResume(transport, {
        url: socketUrl,
        openSocket: (url) => new WebSocket(url),
        clock: {
          now: () => Date.now(),
          setTimeout: (fn, ms) => {
            const handle = win.setTimeout(fn, ms);
            return { cancel: () => win.clearTimeout(handle) };
          },
          setInterval: (fn, ms) => {
            const handle = win.setInterval(fn, ms);
            return { cancel: () => win.clearInterval(handle) };
          },
        },
        // Starting and connecting too: a control plane restart (kill -9) looks like any drop from
        // here, and the next run holds the session; a server that ended it answers the resume with its close.
        resumable: () => (!this.mediaFailed && (this.state.kind === 'streaming' || this.state.kind === 'connecting' || this.state.kind === 'starting')) || this.state.kind === 'queued',
        needsStreamerList: () => !this.streamerListed,
        // From the relay's offer until the video plays: the page's answer may still be owed to the relay.
        negotiating: () => this.state.kind === 'connecting',
        onResuming: () => this.view.setReconnecting(true),
        onResumed: () => this.view.setReconnecting(false),
        onGaveUp: () => this.view.setReconnecting(false),
      });
    } else {
      console.warn('pixelfleet: the frontend library changed its transport; a signalling drop will end the stream');
    }

    const queue = new UiInteractionQueue({ send: (data) => this.stream.emitUIInteraction(data) });
    this.uiInteractions = queue;
    // First of all the app hears: the link's query parameters, once the video plays.
    const query = queryParametersMessage(win.location.search);
    if (query !== undefined) queue.enqueue(query);
    if (win.parent !== win) {
      const embedOrigins = (root.dataset['embedOrigins'] ?? '').split(' ').filter((origin) => origin !== '');
      this.embed = new EmbedBridge(win, win.parent, (data: UiInteractionData) => queue.enqueue(data), embedOrigins);
      this.stream.addResponseEventListener(RESPONSE_LISTENER, (response: string) => this.embed?.postResponse(response));
    }

    this.listenToSignalling();
    this.listenToStream();
    this.listenToPage();
  }

  private listenToSignalling(): void {
    const protocol = this.stream.signallingProtocol;
    for (const type of PIXELFLEET_MESSAGE_TYPES) {
      protocol.addListener(type, (message: unknown) => this.onExtensionMessage(message));
    }
    protocol.transport.addListener('close', (event: CloseEvent) => this.onSocketClosed(event));
  }

  private onExtensionMessage(raw: unknown): void {
    let message: PixelfleetExtensionMessage;
    try {
      message = parseExtensionMessage(raw);
    } catch (error) {
      if (error instanceof ExtensionMessageError) {
        console.warn(`pixelfleet: ignored a malformed extension message: ${error.message}`);
        return;
      }
      throw error;
    }
    switch (message.type) {
      case 'pixelfleetSession':
        this.resume?.enable(message.sessionId, message.viewerToken, message.resumeWindowSeconds);
        this.startTelemetry(message.sessionId, message.viewerToken, message.telemetryUrl);
        break;
      case 'pixelfleetQueue':
        this.transition({
          kind: 'queued',
          position: message.position,
          queueLength: message.queueLength,
          waitingForServer: message.waitingForServer,
          ...(message.estimatedWaitSeconds === undefined ? {} : { estimatedWaitSeconds: message.estimatedWaitSeconds }),
        });
        break;
      case 'pixelfleetStatus':
        this.transition({ kind: 'starting' });
        break;
      default: {
        const unreachable: never = message;
        throw new Error(`unhandled extension message ${JSON.stringify(unreachable)}`);
      }
    }
  }

  private listenToStream(): void {
    const stream = this.stream;
    // streamerList is held by the server until the app is ready: from here on it is WebRTC.
    stream.addEventListener('streamerListMessage', () => {
      this.streamerListed = true;
      this.transition({ kind: 'connecting' });
    });
    stream.addEventListener('webRtcConnecting', () => this.transition({ kind: 'connecting' }));
    stream.addEventListener('webRtcSdpOffer', () => {
      this.transition({ kind: 'connecting' });
      this.record('sdpOffer');
      this.watchIceState();
    });
    stream.addEventListener('webRtcSdpAnswer', () => this.record('sdpAnswer'));
    stream.addEventListener('webRtcConnected', () => this.record('connected', { iceConnectionState: this.peerConnection()?.iceConnectionState ?? 'connected' }));
    // Fired only when the browser's own offer fails; ICE failure is watched in watchIceState.
    stream.addEventListener('webRtcFailed', () => this.onMediaFailed());
    stream.addEventListener('webRtcTCPRelayDetected', () => this.record('tcpFallback', { tcpFallback: true }));
    stream.addEventListener('videoInitialized', () => {
      this.record('videoInitialized');
      this.transition({ kind: 'streaming' });
      this.uiInteractions.drain();
    });
    stream.addEventListener('playStreamRejected', () => {
      this.record('playStreamRejected');
      this.view.showPlayOverlay(true);
    });
    stream.addEventListener('statsReceived', (event) => {
      this.latestStats = statsRow(event.data.aggregatedStats, this.now());
    });
    // Media events do not bubble; a capturing listener on the parent sees the library's <video>.
    this.view.videoParent.addEventListener(
      'playing',
      (event) => {
        if (!(event.target instanceof HTMLVideoElement)) return;
        this.view.showPlayOverlay(false);
        this.view.setMuted(event.target.muted);
        this.embed?.postState({ source: 'pixelfleet', type: 'state', state: 'loadingComplete' });
        this.uiInteractions.drain();
      },
      true,
    );
  }

  private listenToPage(): void {
    const doc = this.options.window.document;
    doc.addEventListener('visibilitychange', () => {
      this.record('visibilitychange', { visibility: doc.visibilityState });
      if (doc.visibilityState !== 'hidden') return;
      // A hidden page may never be shown again (a phone's tab switched away, then discarded).
      this.recordLatestStats();
      this.telemetry?.flushSoon();
    });
    this.options.window.addEventListener('pagehide', (event) => {
      // The socket's own close is not delivered to a page being unloaded: report the departure here.
      if (!event.persisted && this.state.kind !== 'ended') {
        this.leaving = true;
        this.record('disconnected', { code: 1001, reasonName: 'goingAway' });
      }
      // The statistics since the last row, or a viewer who leaves within the first interval leaves
      // no statistics row at all and a session that showed video reads as connectedWithoutVideo.
      this.recordLatestStats();
      this.telemetry?.flushWithBeacon();
    });
  }

  private startTelemetry(sessionId: string, viewerToken: string, telemetryUrl: string): void {
    if (this.telemetry !== undefined) return; // one session per page
    const win = this.options.window;
    let url: string;
    try {
      url = telemetryEndpoint(telemetryUrl, win.location);
    } catch (error) {
      console.warn(`pixelfleet: telemetry disabled: ${String(error)}`);
      return;
    }
    const embedded = win.parent !== win;
    const ancestor = win.location.ancestorOrigins?.[0];
    const domainUrl = embedded ? (ancestor ?? win.document.referrer) : `${win.location.origin}${win.location.pathname}`;
    this.telemetry = new TelemetryReporter({
      url,
      sessionId,
      viewerToken,
      now: this.now,
      transport: browserTelemetryTransport(win.location.origin),
      clientDetails: clientDetails({
        userAgent: win.navigator.userAgent,
        maxTouchPoints: win.navigator.maxTouchPoints,
        embedded,
        domainUrl,
      }),
    });
    this.telemetry.start();
    this.statsTimer = setInterval(() => this.recordLatestStats(), STATS_INTERVAL_MS);
  }

  /** The library's newest statistics, as a row, once (the next row is the next statistics it reports). */
  private recordLatestStats(): void {
    if (this.latestStats === undefined) return;
    this.telemetry?.recordStats(this.latestStats);
    this.latestStats = undefined;
  }

  private record(event: TelemetryEventName, details?: EventDetails): void {
    this.telemetry?.recordEvent(event, details);
  }

  private onSocketClosed(event: CloseEvent): void {
    const described = describeClose(event.code, event.reason);
    const close: CloseDescription = this.mediaFailed ? { ...described, reasonName: 'webRtcFailed', sentence: WEBRTC_FAILED_SENTENCE } : described;
    if (!this.transition({ kind: 'ended', close })) return;
    if (!this.leaving) this.record('disconnected', { code: close.code, reasonName: close.reasonName });
    this.telemetry?.flushSoon();
    if (this.statsTimer !== undefined) clearInterval(this.statsTimer);
    this.uiInteractions.close();
  }

  /** Move to `next` if the state table allows it; render and tell the host page. */
  private transition(next: ViewState): boolean {
    if (!canTransition(this.state.kind, next.kind)) return false;
    this.state = next;
    this.view.render(next);
    switch (next.kind) {
      case 'queued':
        this.embed?.postState({ source: 'pixelfleet', type: 'state', state: queueState(next.position) });
        break;
      case 'starting':
      case 'connecting':
        this.embed?.postState({ source: 'pixelfleet', type: 'state', state: 'connecting' });
        break;
      case 'ended':
        this.embed?.postState({
          source: 'pixelfleet',
          type: 'state',
          state: 'disconnected',
          code: next.close.code,
          reason: next.close.reason,
          message: next.close.sentence,
        });
        break;
      case 'opening':
      case 'streaming':
        break; // `loadingComplete` waits for the video to actually play
      default: {
        const unreachable: never = next;
        throw new Error(`unknown view state ${JSON.stringify(unreachable)}`);
      }
    }
    return true;
  }

  private peerConnection(): RTCPeerConnection | undefined {
    // Exists once `config` arrived; the library types it as always present.
    const controller = this.stream.webRtcController.peerConnectionController as { peerConnection?: RTCPeerConnection } | undefined;
    return controller?.peerConnection;
  }

  /**
   * Report ICE trouble and the recovery after it. `failed` is final (the library never restarts
   * ICE and, when the streamer offers, emits nothing for it), so it ends the session.
   */
  private watchIceState(): void {
    const connection = this.peerConnection();
    if (connection === undefined) return;
    let troubled = false;
    connection.addEventListener('iceconnectionstatechange', () => {
      const state = connection.iceConnectionState;
      if (state === 'failed') {
        this.onMediaFailed();
      } else if (state === 'disconnected') {
        troubled = true;
        this.record('iceConnectionStateChange', { iceConnectionState: state });
      } else if (troubled && (state === 'connected' || state === 'completed')) {
        troubled = false;
        this.record('iceConnectionStateChange', { iceConnectionState: state });
      }
    });
  }

  private onMediaFailed(): void {
    if (this.mediaFailed || this.state.kind === 'ended') return;
    this.mediaFailed = true;
    this.record('iceConnectionStateChange', { iceConnectionState: this.peerConnection()?.iceConnectionState ?? 'failed' });
    this.stream.disconnect(); // the close handler reports it as webRtcFailed
  }

  private toggleMute(): boolean {
    const controller = this.stream.webRtcController;
    const video = controller.videoPlayer.getVideoElement();
    const audio = controller.streamController.audioElement;
    const muted = !video.muted;
    video.muted = muted;
    audio.muted = muted;
    if (!muted) {
      video.play().catch(() => undefined);
      if (audio.srcObject !== null) audio.play().catch(() => undefined);
    }
    return muted;
  }
}
