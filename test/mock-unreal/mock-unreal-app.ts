// Composition root of the mock Unreal app: the streamer side of Pixel Streaming signalling, one
// PlayerSession per playerConnected, and one frame clock driving every player's copy of the clip.
// mock-unreal.ts owns the process (signals, exit codes, failure modes); this owns the streaming.
import { FrameClock } from './frame-clock';
import type { H264Clip } from './h264-clip';
import type { MockUnrealConfig } from './command-line';
import { PlayerSession } from './player-session';
import { SignallingConnection, type ParseResult, type ServerMessage, type SignallingCloseInfo } from './signalling-connection';
import type { UnrealLog } from './unreal-log';

/** The signalling protocol version the streamer reports in endpointId (UE 5.5–5.7). */
export const SIGNALLING_PROTOCOL_VERSION = '1.3.0';

export interface MockUnrealAppHooks {
  /** The signalling socket closed without close() being called (server gone, refused, dropped). */
  onSignallingClosed(info: SignallingCloseInfo): void;
}

export interface MockUnrealApp {
  /** Dials the signalling server; called again after onSignallingClosed, re-dials it. */
  start(): void;
  /** Ends every player's peer connection (their signalling server is gone); returns how many there were. */
  endPlayers(reason: string): number;
  /** Closes every peer connection and the signalling socket. Idempotent. */
  close(reason: string): Promise<void>;
  readonly playerIds: readonly string[];
}

export function createMockUnrealApp(config: MockUnrealConfig, clip: H264Clip, log: UnrealLog, hooks: MockUnrealAppHooks): MockUnrealApp {
  const sessions = new Map<string, PlayerSession>();
  let signalling: SignallingConnection | undefined;
  let closing: Promise<void> | undefined;
  const clock = new FrameClock({ fps: clip.fps }, (tick) => {
    for (const session of sessions.values()) session.onTick(tick);
  });

  const send: SignallingConnection['send'] = (message) => signalling?.send(message) ?? false;

  const endSession = (playerId: string, reason: string): void => {
    const session = sessions.get(playerId);
    if (session === undefined) return;
    sessions.delete(playerId);
    if (sessions.size === 0) clock.stop();
    void session.close(reason);
  };

  const withSession = (playerId: string, what: string, action: (session: PlayerSession) => Promise<void>): void => {
    const session = sessions.get(playerId);
    if (session === undefined) {
      log.warning('LogPixelStreaming', `Ignoring ${what} for unknown player ${playerId}`);
      return;
    }
    action(session).catch((error: unknown) => {
      log.error('LogPixelStreaming', `${what} for ${playerId} failed: ${String(error)}`);
    });
  };

  const onPlayerConnected = (playerId: string): void => {
    if (sessions.has(playerId)) endSession(playerId, 'replaced by a new connection');
    log.log('LogPixelStreaming', `Player ${playerId} connected; creating peer connection`);
    const session = new PlayerSession({
      playerId,
      clip,
      settings: config,
      icePortRange: config.icePortRange,
      kickOnUIInteraction: config.failure.kickOnUIInteraction,
      log,
      signal: send,
      onEnded: (id, reason) => {
        log.warning('LogPixelStreaming', `Player ${id} session ended: ${reason}`);
        endSession(id, reason);
      },
    });
    sessions.set(playerId, session);
    clock.start();
    withSession(playerId, 'offer', (s) => s.start());
  };

  const onMessage = (message: ServerMessage): void => {
    switch (message.type) {
      case 'config': {
        const options = message.peerConnectionOptions;
        const servers = typeof options === 'object' && options !== null && 'iceServers' in options && Array.isArray(options.iceServers)
          ? options.iceServers.length
          : 0;
        log.log('LogPixelStreaming', `Received config (protocol ${message.protocolVersion ?? 'unspecified'}); ` +
          `${servers} ICE server(s) offered, using host candidates only`);
        break;
      }
      case 'identify':
        send({ type: 'endpointId', id: config.streamerId, protocolVersion: SIGNALLING_PROTOCOL_VERSION });
        log.log('LogPixelStreaming', `Identifying to signalling as ${config.streamerId}`);
        break;
      case 'endpointIdConfirm':
        log.log('LogPixelStreaming', `Streamer identified as ${message.committedId}`);
        break;
      case 'playerConnected':
        onPlayerConnected(message.playerId);
        break;
      case 'playerDisconnected':
        log.log('LogPixelStreaming', `Player ${message.playerId} disconnected`);
        endSession(message.playerId, 'playerDisconnected');
        break;
      case 'answer':
        withSession(message.playerId, 'answer', (s) => s.acceptAnswer(message.sdp));
        break;
      case 'iceCandidate':
        withSession(message.playerId, 'iceCandidate', (s) => s.addRemoteCandidate(message.candidate));
        break;
      case 'ping':
        send({ type: 'pong', time: message.time ?? Math.floor(Date.now() / 1000) });
        break;
      case 'pong':
        break;
      default: {
        const unreachable: never = message;
        log.warning('LogPixelStreaming', `Unhandled signalling message ${JSON.stringify(unreachable)}`);
      }
    }
  };

  const onParsed = (result: ParseResult): void => {
    if (result.kind === 'message') onMessage(result.message);
    else if (result.kind === 'unhandled') log.warning('LogPixelStreaming', `Unhandled signalling message type "${result.type}"`);
    else log.warning('LogPixelStreaming', `Invalid signalling message: ${result.problem}`);
  };

  return {
    start(): void {
      const url = config.signallingUrl;
      if (url === undefined) {
        log.warning('LogPixelStreaming', 'No signalling URL given (-PixelStreamingURL / -PixelStreamingConnectionURL); not streaming');
        return;
      }
      log.log('LogPixelStreaming', `Connecting to signalling server at ${url}`);
      signalling = new SignallingConnection({ url, keepAliveIntervalMs: config.keepAliveIntervalMs }, {
        onOpen: () => log.log('LogPixelStreaming', `Connected to signalling server at ${url}`),
        onParsed,
        onClose: (info) => {
          if (closing === undefined) hooks.onSignallingClosed(info);
        },
      });
    },

    endPlayers(reason: string): number {
      const ids = [...sessions.keys()];
      for (const id of ids) endSession(id, reason);
      return ids.length;
    },

    close(reason: string): Promise<void> {
      closing ??= (async () => {
        clock.stop();
        const all = [...sessions.values()];
        sessions.clear();
        await Promise.all(all.map((session) => session.close(reason)));
        signalling?.close();
      })();
      return closing;
    },

    get playerIds(): readonly string[] {
      return [...sessions.keys()];
    },
  };
}
