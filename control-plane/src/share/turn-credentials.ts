// Per-session TURN credentials (the TURN REST API scheme that coturn's `use-auth-secret` checks):
// username `<expiry>:<sessionId>` (expiry in Unix seconds), credential
// base64(HMAC-SHA1(secret, username)). The control plane and coturn share only the secret; no
// password is stored or served in a page. The gateway adds the session's entry to the `config`
// the relay sends its viewer, at the moment it is sent.
import { createHmac } from 'node:crypto';
import type { IceServer, PeerConnectionOptions } from '@pixelfleet/signaling';

export interface TurnSettings {
  /** coturn's `static-auth-secret`. */
  readonly secret: string;
  /** `turn:` / `turns:` URLs the viewer's browser dials. */
  readonly urls: readonly string[];
  /** How long a credential is valid from its issue; coturn refuses every request past it, allocation refreshes included. */
  readonly ttlSeconds: number;
}

/** The ICE server entry for one session's viewer, valid ttlSeconds from nowMs. */
export function turnIceServer(turn: TurnSettings, sessionId: string, nowMs: number): Required<IceServer> {
  const username = `${Math.floor(nowMs / 1000) + turn.ttlSeconds}:${sessionId}`;
  const credential = createHmac('sha1', turn.secret).update(username).digest('base64');
  return { urls: [...turn.urls], username, credential };
}

/** The relay's peer connection options with the session's TURN server added after the relay's own. */
export function withTurnServer(options: PeerConnectionOptions, server: IceServer): PeerConnectionOptions {
  return { ...options, iceServers: [...(options.iceServers ?? []), server] };
}
