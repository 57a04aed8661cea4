import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TURN_EXPIRY_MARGIN_SECONDS, turnIceServer, withTurnServer, type TurnSettings } from './turn-credentials';

const TURN: TurnSettings = { secret: 'turn-secret-0123456789abcdef', urls: ['turn:turn.example.com:3478?transport=udp', 'turns:turn.example.com:5349?transport=tcp'], ttlSeconds: 86_400 };

describe('per-session TURN credentials (TURN REST API scheme)', () => {
  it('names the expiry and the session in the username and signs it with HMAC-SHA1 of the secret, base64', () => {
    // Issued one TTL before 2026-01-01T00:00:00Z (1767225600), in the middle of a second.
    const server = turnIceServer(TURN, 'sess_example', (1_767_225_600 - 86_400) * 1000 + 999);
    expect(server.username).toBe('1767225600:sess_example');
    // As `printf %s '1767225600:sess_example' | openssl dgst -sha1 -hmac '<secret>' -binary | base64` prints it.
    expect(server.credential).toBe('8HkAHQoq//YjhvVspzQLUJh+ZTs=');
    expect(server.urls).toEqual(TURN.urls);
  });

  it('gives each session and each issue time its own credential', () => {
    const a = turnIceServer(TURN, 'sess_a', 1_000_000);
    const b = turnIceServer(TURN, 'sess_b', 1_000_000);
    const later = turnIceServer(TURN, 'sess_a', 1_000_000 + 1_000);
    expect(new Set([a.credential, b.credential, later.credential]).size).toBe(3);
    expect(later.username).toBe(`${1_000 + 1 + 86_400}:sess_a`);
    expect(b.credential).toBe(createHmac('sha1', TURN.secret).update(b.username).digest('base64'));
  });

  it("expires at the session's latest end plus the margin when that comes before the TTL, never later than the TTL", () => {
    const issued = 1_767_225_600_000;
    const expiry = (sessionEndsByMs?: number) => Number(turnIceServer(TURN, 'sess_a', issued, sessionEndsByMs).username.split(':')[0]);
    // An hour's cap: an hour and the margin, not a day.
    expect(TURN_EXPIRY_MARGIN_SECONDS).toBe(60);
    expect(expiry(issued + 3_600_000)).toBe(1_767_225_600 + 3_600 + 60);
    // The end falls in the middle of a second: rounded up, so the credential never expires before the session.
    expect(expiry(issued + 3_600_000 + 1)).toBe(1_767_225_600 + 3_601 + 60);
    // A session that may run past the TTL: the TTL still bounds it.
    expect(expiry(issued + 2 * 86_400_000)).toBe(1_767_225_600 + 86_400);
    expect(expiry(issued + 86_400_000 - 59_000)).toBe(1_767_225_600 + 86_400);
    // No cap on the session: the TTL alone.
    expect(expiry(undefined)).toBe(1_767_225_600 + 86_400);
    // The credential signs the capped username.
    const capped = turnIceServer(TURN, 'sess_a', issued, issued + 3_600_000);
    expect(capped.credential).toBe(createHmac('sha1', TURN.secret).update(capped.username).digest('base64'));
  });

  it("adds the session's server after the relay's own, keeping the relay's other options", () => {
    const server = turnIceServer(TURN, 'sess_a', 0);
    const relay = { iceServers: [{ urls: 'stun:stun.example.com:3478' }], iceTransportPolicy: 'all' as const };
    expect(withTurnServer(relay, server)).toEqual({ iceServers: [{ urls: 'stun:stun.example.com:3478' }, server], iceTransportPolicy: 'all' });
    expect(withTurnServer({}, server)).toEqual({ iceServers: [server] });
    expect(relay.iceServers).toHaveLength(1);
  });
});
