// Per-session TURN credentials (the TURN REST API scheme that coturn's `use-auth-secret` checks):
// username `<expiry>:<sessionId>` (expiry in Unix seconds), credential
// base64(HMAC-SHA1(secret, username)). The control plane and coturn share only the secret; no
// password is stored or served in a page. The gateway adds the session's entry to the `config`
// the relay sends its viewer, at the moment it is sent (a config held for a viewer who was away is
// signed when the resumed socket gets it).
//
// A credential is good for no longer than its session can last: its expiry is the earlier of
// `ttlSeconds` from its issue and the session's latest possible end (sessionEndsByMs: placed +
// the session's maxRunTime, the deadline SessionTimers enforces) plus TURN_EXPIRY_MARGIN_SECONDS.
// A session without a run-time cap gets the TTL alone.
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

/**
 * Past the session's latest end, how long its credential stays valid: the agent's stop grace (the
 * app may stream while it is asked to stop) and the clock difference between the control plane's
 * host and coturn's, with room to spare. A minute of relay at most after the session ended.
 */
export const TURN_EXPIRY_MARGIN_SECONDS = 60;

/**
 * The ICE server entry for one session's viewer, issued at nowMs: valid ttlSeconds from then, and
 * never past sessionEndsByMs (the session's latest possible end, when it has one) plus
 * TURN_EXPIRY_MARGIN_SECONDS.
 */
export function turnIceServer(turn: TurnSettings, sessionId: string, nowMs: number, sessionEndsByMs?: number): Required<IceServer> {
  const byTtl = Math.floor(nowMs / 1000) + turn.ttlSeconds;
  const bySession = sessionEndsByMs === undefined ? byTtl : Math.ceil(sessionEndsByMs / 1000) + TURN_EXPIRY_MARGIN_SECONDS;
  const username = `${Math.min(byTtl, bySession)}:${sessionId}`;
  const credential = createHmac('sha1', turn.secret).update(username).digest('base64');
  return { urls: [...turn.urls], username, credential };
}

/** The relay's peer connection options with the session's TURN server added after the relay's own. */
export function withTurnServer(options: PeerConnectionOptions, server: IceServer): PeerConnectionOptions {
  return { ...options, iceServers: [...(options.iceServers ?? []), server] };
}
