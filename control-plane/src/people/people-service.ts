// People and the dashboard: a user is invited by e-mail to set a password through a single-use
// link, signs in with address and password, and stays signed in through a server-side session
// whose token only the cookie holds (its digest is stored). Links and sessions expire; a password
// reset or change ends every other sign-in. Sign-ins are throttled (sign-in-throttle.ts) and every
// answer is the same whether or not an address has an account: a refused sign-in, an unknown
// address and a person without a password yet look alike, and take as long.
import type { Logger } from 'pino';
import type { Clock } from '@pixelfleet/common';
import { generateSecret, sha256Hex } from '../lib/secrets';
import { invalid, notFound } from '../errors';
import type { AccountService } from '../accounts/account-service';
import type { EventLog } from '../events/event-log';
import type { User, UsersRepository } from '../repositories/users';
import type { LinkPurpose, SignInsRepository } from '../repositories/sign-ins';
import type { OutgoingMail } from '../mail/mail-delivery';
import { hashPassword, passwordProblem, UNMATCHABLE_HASH, verifyPassword } from './passwords';
import { KeyedBuckets, SignInThrottle } from './sign-in-throttle';

/** How long an invitation link works, and a password reset link. */
export const INVITATION_TTL_MS = 72 * 3_600_000;
export const PASSWORD_RESET_TTL_MS = 3_600_000;
/** A sign-in ends after this long without a request, and this long after it began, whichever is first. */
export const SESSION_IDLE_MS = 24 * 3_600_000;
export const SESSION_MAX_MS = 14 * 24 * 3_600_000;
/** A session's last-seen time is written at most this often (not on every request). */
const TOUCH_EVERY_MS = 60_000;
/** Password reset mails per address: three back to back, then one every ten minutes (no mailbox is flooded through us). */
const RESET_MAILS = { burst: 3, perSecond: 1 / 600 };
/** How long a sign-in shown the admin token may act as an operator (the fleet page). */
export const OPERATOR_SESSION_MS = 60 * 60_000;
/** Password reset requests per client network, for any address: ten back to back, then one a minute (no address list is walked through us). */
export const RESET_REQUESTS = { burst: 10, perSecond: 1 / 60 };

export type PasswordResetOutcome = { readonly kind: 'accepted' } | { readonly kind: 'throttled'; readonly retryAfterSeconds: number };

export type SignInOutcome =
  | { readonly kind: 'signedIn'; readonly token: string; readonly user: User; readonly expiresAt: number }
  | { readonly kind: 'refused' }
  | { readonly kind: 'throttled'; readonly retryAfterSeconds: number };

export interface PeopleServiceDeps {
  users: UsersRepository;
  signIns: SignInsRepository;
  accounts: AccountService;
  mail: { send(mail: OutgoingMail): number };
  events: EventLog;
  clock: Clock;
  log: Logger;
  /** The dashboard's public URL (`publicUrls.dashboard`), known once the HTTP server listens. */
  dashboardUrl: () => string;
}

export class PeopleService {
  private readonly throttle: SignInThrottle;
  private readonly resetMails: KeyedBuckets;
  private readonly resetRequests: KeyedBuckets;

  constructor(private readonly d: PeopleServiceDeps) {
    this.throttle = new SignInThrottle(d.clock);
    this.resetMails = new KeyedBuckets(RESET_MAILS, d.clock);
    this.resetRequests = new KeyedBuckets(RESET_REQUESTS, d.clock);
  }

  /**
   * Invites a person by e-mail to set their password, making their user if the address is new.
   * A person who has a password already gets no invitation (they sign in, or reset it): invited false.
   * @throws DomainError invalid (not an e-mail address)
   */
  invite(email: string): { user: User; created: boolean; invited: boolean } {
    const existing = this.d.users.findByEmail(email.trim());
    const user = existing ?? this.d.accounts.createUser(email);
    if (this.d.signIns.passwordHash(user.userId) !== undefined) return { user, created: false, invited: false };
    const link = this.issueLink(user.userId, 'invitation', INVITATION_TTL_MS);
    this.d.mail.send({
      to: user.email,
      subject: 'Your Pixelfleet account',
      text: [
        'You have been invited to Pixelfleet, where you manage your streamed Unreal Engine projects.',
        '',
        `Choose your password here (the link works once, for ${INVITATION_TTL_MS / 3_600_000} hours):`,
        `${this.d.dashboardUrl()}/set-password#token=${link}`,
        '',
        `Then sign in at ${this.d.dashboardUrl()} with ${user.email}.`,
      ].join('\n'),
    });
    this.d.events.record('user.invited', {}, { userId: user.userId });
    return { user, created: existing === undefined, invited: true };
  }

  /**
   * Sets the password of the person an invitation or reset link was mailed to, using the link.
   * @throws DomainError invalid (a password the policy refuses; the link still works), not_found (an unknown, used or expired link)
   */
  async setPasswordWithLink(token: string, purpose: LinkPurpose, password: string): Promise<User> {
    const tokenHash = sha256Hex(token);
    const userId = this.d.signIns.findLinkUser(tokenHash, purpose, this.d.clock.now());
    const user = userId === undefined ? undefined : this.d.users.findById(userId);
    if (user === undefined) throw notFound(LINK_GONE[purpose]);
    const problem = passwordProblem(password, user.email);
    if (problem !== undefined) throw invalid(problem);
    const hash = await hashPassword(password);
    // Used only now, after the slow hash: two tabs posting the same link cannot both set a password.
    if (this.d.signIns.useLink(tokenHash, purpose, this.d.clock.now()) !== user.userId) throw notFound(LINK_GONE[purpose]);
    this.d.signIns.setPasswordHash(user.userId, hash);
    this.d.signIns.retireLinks(user.userId, 'invitation', this.d.clock.now());
    this.d.signIns.retireLinks(user.userId, 'passwordReset', this.d.clock.now());
    // Whoever knew the old password is signed out.
    const ended = this.d.signIns.deleteSessionsOf(user.userId);
    this.d.events.record('user.passwordSet', {}, { userId: user.userId, via: purpose });
    this.d.log.info({ userId: user.userId, via: purpose, signInsEnded: ended }, 'password set');
    return user;
  }

  /**
   * Mails a password reset link to the address if it has an account; says nothing either way (the
   * caller answers the same). At most RESET_MAILS per address, and RESET_REQUESTS per client
   * network whatever the address (throttled: the wait; it tells nothing of any account).
   */
  requestPasswordReset(email: string, network: string): PasswordResetOutcome {
    const networkBucket = this.resetRequests.get(network);
    if (!networkBucket.take()) return { kind: 'throttled', retryAfterSeconds: Math.max(1, Math.ceil(networkBucket.waitMs() / 1000)) };
    const user = this.d.users.findByEmail(email.trim());
    if (user === undefined) return { kind: 'accepted' };
    if (!this.resetMails.get(user.email.toLowerCase()).take()) {
      this.d.log.info({ userId: user.userId }, 'password reset not mailed: too many asked for this address');
      return { kind: 'accepted' };
    }
    const link = this.issueLink(user.userId, 'passwordReset', PASSWORD_RESET_TTL_MS);
    this.d.mail.send({
      to: user.email,
      subject: 'Reset your Pixelfleet password',
      text: [
        'Someone (we hope you) asked to reset the password of your Pixelfleet account.',
        '',
        `Choose a new password here (the link works once, for ${PASSWORD_RESET_TTL_MS / 60_000} minutes):`,
        `${this.d.dashboardUrl()}/reset-password#token=${link}`,
        '',
        'If it was not you, ignore this mail: your password stays as it is.',
      ].join('\n'),
    });
    return { kind: 'accepted' };
  }

  /** Checks address and password; a sign-in gets a session token for the cookie. `network`: the client's address block. */
  async signIn(email: string, password: string, network: string): Promise<SignInOutcome> {
    const waitMs = this.throttle.waitMs(email, network);
    if (waitMs > 0) return { kind: 'throttled', retryAfterSeconds: Math.ceil(waitMs / 1000) };
    const user = email.length <= 254 ? this.d.users.findByEmail(email.trim()) : undefined;
    const hash = user === undefined ? undefined : this.d.signIns.passwordHash(user.userId);
    // The same work for an unknown address or a person with no password yet as for a wrong password.
    const matches = await verifyPassword(password, hash ?? UNMATCHABLE_HASH);
    if (!matches || user === undefined || hash === undefined) {
      this.throttle.failed(email, network);
      this.d.log.info({ network }, 'dashboard sign-in refused');
      return { kind: 'refused' };
    }
    const now = this.d.clock.now();
    const token = generateSecret('pfs');
    const expiresAt = now + SESSION_MAX_MS;
    this.d.signIns.insertSession(sha256Hex(token), { userId: user.userId, createdAt: now, lastSeenAt: now, expiresAt });
    this.d.log.info({ userId: user.userId }, 'dashboard sign-in');
    return { kind: 'signedIn', token, user, expiresAt };
  }

  /** The user a session token belongs to, while it is alive (an idle or expired one is ended here). */
  userOfSession(token: string): User | undefined {
    const tokenHash = sha256Hex(token);
    const session = this.d.signIns.findSession(tokenHash);
    if (session === undefined) return undefined;
    const now = this.d.clock.now();
    if (now >= session.expiresAt || now - session.lastSeenAt >= SESSION_IDLE_MS) {
      this.d.signIns.deleteSession(tokenHash);
      return undefined;
    }
    if (now - session.lastSeenAt >= TOUCH_EVERY_MS) this.d.signIns.touchSession(tokenHash, now);
    return this.d.users.findById(session.userId);
  }

  /** Whether the sign-in may act as an operator now (it was shown the admin token, not long ago). */
  isOperatorSession(token: string): boolean {
    const until = this.d.signIns.findSession(sha256Hex(token))?.operatorUntil;
    return until !== undefined && this.d.clock.now() < until;
  }

  /**
   * Lets a sign-in act as an operator for OPERATOR_SESSION_MS, never past the sign-in's own end.
   * The caller has checked the admin token.
   */
  grantOperator(token: string): number {
    const tokenHash = sha256Hex(token);
    const session = this.d.signIns.findSession(tokenHash);
    if (session === undefined) throw notFound('no such sign-in');
    const until = Math.min(session.expiresAt, this.d.clock.now() + OPERATOR_SESSION_MS);
    this.d.signIns.setOperatorUntil(tokenHash, until);
    this.d.events.record('user.operatorSignIn', {}, { userId: session.userId, until });
    return until;
  }

  signOut(token: string): void {
    this.d.signIns.deleteSession(sha256Hex(token));
  }

  /** Ends every sign-in of the user (sign out everywhere); returns how many ended. */
  signOutEverywhere(userId: string): number {
    return this.d.signIns.deleteSessionsOf(userId);
  }

  /**
   * A signed-in person changes their password: the current one is checked, and every other
   * sign-in ends (this one stays).
   * @throws DomainError invalid (the current password is wrong, or the new one is refused)
   */
  async changePassword(sessionToken: string, current: string, next: string): Promise<void> {
    const user = this.userOfSession(sessionToken);
    const hash = user === undefined ? undefined : this.d.signIns.passwordHash(user.userId);
    if (user === undefined || hash === undefined || !(await verifyPassword(current, hash))) throw invalid('the current password is not right');
    const problem = passwordProblem(next, user.email);
    if (problem !== undefined) throw invalid(problem);
    this.d.signIns.setPasswordHash(user.userId, await hashPassword(next));
    this.d.signIns.deleteSessionsOf(user.userId, sha256Hex(sessionToken));
    this.d.events.record('user.passwordSet', {}, { userId: user.userId, via: 'change' });
  }

  /**
   * A new API key for the signed-in person, shown once by the caller and mailed to their address
   * (as the spec says); the previous key stops working at once.
   */
  issueApiKey(user: User): string {
    const apiKey = this.d.accounts.issueKey(user.userId);
    this.d.mail.send({
      to: user.email,
      subject: 'Your new Pixelfleet API key',
      text: [
        'A new API key was requested for your Pixelfleet account in the dashboard.',
        '',
        apiKey,
        '',
        `Use it with your user id ${user.userId}. Your previous key stopped working when this one was made.`,
        'If you did not ask for it, sign in, change your password and request another key.',
      ].join('\n'),
    });
    this.d.log.info({ userId: user.userId }, 'API key issued from the dashboard');
    return apiKey;
  }

  private issueLink(userId: string, purpose: LinkPurpose, ttlMs: number): string {
    const now = this.d.clock.now();
    // A newer link replaces the older ones: only the last mail works.
    this.d.signIns.retireLinks(userId, purpose, now);
    const token = generateSecret(purpose === 'invitation' ? 'pfi' : 'pfr');
    this.d.signIns.insertLink({ tokenHash: sha256Hex(token), userId, purpose, createdAt: now, expiresAt: now + ttlMs });
    return token;
  }
}

const LINK_GONE: Readonly<Record<LinkPurpose, string>> = {
  invitation: 'this invitation link was used already or has expired: ask the person who invited you for a new one',
  passwordReset: 'this password reset link was used already or has expired: ask for a new one',
};
