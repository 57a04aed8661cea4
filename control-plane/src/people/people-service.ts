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
import { KeyedSerial } from '../lib/keyed-serial';

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
  mail: { send(mail: OutgoingMail): Promise<number> };
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
  /**
   * What one person's links, password, sign-ins and key become, one change at a time (keyed by
   * address, lower case): a check and the writes that depend on it (no password yet → a new
   * invitation; retire the old links → insert the new one → mail it; use the link → set the
   * password → retire the links → end the sign-ins) would otherwise interleave at every await of
   * the store, leaving two links that work, a mail with a key or link already replaced, or an
   * invitation issued after the password was set. Within one control plane; the single-use of a
   * link is the database's (useLink is one statement).
   */
  private readonly perPerson = new KeyedSerial<string>();

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
  invite(email: string): Promise<{ user: User; created: boolean; invited: boolean }> {
    // Two invitations of one new address at once: the second finds the user the first made.
    return this.perPerson.run(personKey(email), () => this.inviteNow(email));
  }

  private async inviteNow(email: string): Promise<{ user: User; created: boolean; invited: boolean }> {
    const existing = await this.d.users.findByEmail(email.trim());
    const user = existing ?? (await this.d.accounts.createUser(email));
    if ((await this.d.signIns.passwordHash(user.userId)) !== undefined) return { user, created: false, invited: false };
    const link = await this.issueLink(user.userId, 'invitation', INVITATION_TTL_MS);
    await this.d.mail.send({
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
    const userId = await this.d.signIns.findLinkUser(tokenHash, purpose, this.d.clock.now());
    const user = userId === undefined ? undefined : await this.d.users.findById(userId);
    if (user === undefined) throw notFound(LINK_GONE[purpose]);
    const problem = passwordProblem(password, user.email);
    if (problem !== undefined) throw invalid(problem);
    const hash = await hashPassword(password);
    await this.perPerson.run(personKey(user.email), async () => {
      // Used only now, after the slow hash, in one statement: two tabs posting the same link cannot both set a password.
      if ((await this.d.signIns.useLink(tokenHash, purpose, this.d.clock.now())) !== user.userId) throw notFound(LINK_GONE[purpose]);
      await this.d.signIns.setPasswordHash(user.userId, hash);
      await this.d.signIns.retireLinks(user.userId, 'invitation', this.d.clock.now());
      await this.d.signIns.retireLinks(user.userId, 'passwordReset', this.d.clock.now());
      // Whoever knew the old password is signed out.
      const ended = await this.d.signIns.deleteSessionsOf(user.userId);
      this.d.events.record('user.passwordSet', {}, { userId: user.userId, via: purpose });
      this.d.log.info({ userId: user.userId, via: purpose, signInsEnded: ended }, 'password set');
    });
    return user;
  }

  /**
   * Mails a password reset link to the address if it has an account; says nothing either way (the
   * caller answers the same). At most RESET_MAILS per address, and RESET_REQUESTS per client
   * network whatever the address (throttled: the wait; it tells nothing of any account).
   */
  async requestPasswordReset(email: string, network: string): Promise<PasswordResetOutcome> {
    // The buckets are taken from synchronously (in memory): requests at once are each counted.
    const networkBucket = this.resetRequests.get(network);
    if (!networkBucket.take()) return { kind: 'throttled', retryAfterSeconds: Math.max(1, Math.ceil(networkBucket.waitMs() / 1000)) };
    const user = await this.d.users.findByEmail(email.trim());
    if (user === undefined) return { kind: 'accepted' };
    if (!this.resetMails.get(user.email.toLowerCase()).take()) {
      this.d.log.info({ userId: user.userId }, 'password reset not mailed: too many asked for this address');
      return { kind: 'accepted' };
    }
    await this.perPerson.run(personKey(user.email), () => this.mailResetLink(user));
    return { kind: 'accepted' };
  }

  /** A new reset link (the older ones stop working), mailed: the last mail holds the one that works. */
  private async mailResetLink(user: User): Promise<void> {
    const link = await this.issueLink(user.userId, 'passwordReset', PASSWORD_RESET_TTL_MS);
    await this.d.mail.send({
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
  }

  /** Checks address and password; a sign-in gets a session token for the cookie. `network`: the client's address block. */
  async signIn(email: string, password: string, network: string): Promise<SignInOutcome> {
    // The throttle is in memory: its check here and its count below are synchronous, so no failure
    // is lost; sign-ins in flight at once are checked against the count as it was (as they were
    // while the password hash is compared, before the store answered asynchronously).
    const waitMs = this.throttle.waitMs(email, network);
    if (waitMs > 0) return { kind: 'throttled', retryAfterSeconds: Math.ceil(waitMs / 1000) };
    const user = email.length <= 254 ? await this.d.users.findByEmail(email.trim()) : undefined;
    const hash = user === undefined ? undefined : await this.d.signIns.passwordHash(user.userId);
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
    await this.d.signIns.insertSession(sha256Hex(token), { userId: user.userId, createdAt: now, lastSeenAt: now, expiresAt });
    this.d.log.info({ userId: user.userId }, 'dashboard sign-in');
    return { kind: 'signedIn', token, user, expiresAt };
  }

  /**
   * The user a session token belongs to, while it is alive (an idle or expired one is ended here).
   * A request that read its sign-in just before a sign-out or password reset ended it finishes as
   * one that came just before (the deletions, the touch and the operator grant are single statements).
   */
  async userOfSession(token: string): Promise<User | undefined> {
    const tokenHash = sha256Hex(token);
    const session = await this.d.signIns.findSession(tokenHash);
    if (session === undefined) return undefined;
    const now = this.d.clock.now();
    if (now >= session.expiresAt || now - session.lastSeenAt >= SESSION_IDLE_MS) {
      await this.d.signIns.deleteSession(tokenHash);
      return undefined;
    }
    if (now - session.lastSeenAt >= TOUCH_EVERY_MS) await this.d.signIns.touchSession(tokenHash, now);
    return this.d.users.findById(session.userId);
  }

  /** Whether the sign-in may act as an operator now (it was shown the admin token, not long ago). */
  async isOperatorSession(token: string): Promise<boolean> {
    const until = (await this.d.signIns.findSession(sha256Hex(token)))?.operatorUntil;
    return until !== undefined && this.d.clock.now() < until;
  }

  /**
   * Lets a sign-in act as an operator for OPERATOR_SESSION_MS, never past the sign-in's own end.
   * The caller has checked the admin token.
   */
  async grantOperator(token: string): Promise<number> {
    const tokenHash = sha256Hex(token);
    const session = await this.d.signIns.findSession(tokenHash);
    if (session === undefined) throw notFound('no such sign-in');
    const until = Math.min(session.expiresAt, this.d.clock.now() + OPERATOR_SESSION_MS);
    await this.d.signIns.setOperatorUntil(tokenHash, until);
    this.d.events.record('user.operatorSignIn', {}, { userId: session.userId, until });
    return until;
  }

  signOut(token: string): Promise<void> {
    return this.d.signIns.deleteSession(sha256Hex(token));
  }

  /** Ends every sign-in of the user (sign out everywhere); returns how many ended. */
  signOutEverywhere(userId: string): Promise<number> {
    return this.d.signIns.deleteSessionsOf(userId);
  }

  /**
   * A signed-in person changes their password: the current one is checked, and every other
   * sign-in ends (this one stays).
   * @throws DomainError invalid (the current password is wrong, or the new one is refused)
   */
  async changePassword(sessionToken: string, current: string, next: string): Promise<void> {
    const user = await this.userOfSession(sessionToken);
    if (user === undefined) throw invalid('the current password is not right');
    // From reading the current hash to ending the other sign-ins, one change of this person at a
    // time: two changes at once cannot both pass against the same current password.
    await this.perPerson.run(personKey(user.email), async () => {
      // A reset that came first ended this sign-in: it changes nothing (as one after it would).
      if ((await this.d.signIns.findSession(sha256Hex(sessionToken)))?.userId !== user.userId) throw invalid('the current password is not right');
      const hash = await this.d.signIns.passwordHash(user.userId);
      if (hash === undefined || !(await verifyPassword(current, hash))) throw invalid('the current password is not right');
      const problem = passwordProblem(next, user.email);
      if (problem !== undefined) throw invalid(problem);
      await this.d.signIns.setPasswordHash(user.userId, await hashPassword(next));
      await this.d.signIns.deleteSessionsOf(user.userId, sha256Hex(sessionToken));
      this.d.events.record('user.passwordSet', {}, { userId: user.userId, via: 'change' });
    });
  }

  /**
   * A new API key for the signed-in person, shown once by the caller and mailed to their address
   * (as the spec says); the previous key stops working at once.
   */
  issueApiKey(user: User): Promise<string> {
    // Two at once: the key mailed last is the one that works (rotation and mail, one at a time).
    return this.perPerson.run(personKey(user.email), () => this.issueApiKeyNow(user));
  }

  private async issueApiKeyNow(user: User): Promise<string> {
    const apiKey = await this.d.accounts.issueKey(user.userId);
    await this.d.mail.send({
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

  /** Called within the person's perPerson turn (retiring and inserting must not interleave with another link's). */
  private async issueLink(userId: string, purpose: LinkPurpose, ttlMs: number): Promise<string> {
    const now = this.d.clock.now();
    // A newer link replaces the older ones: only the last mail works.
    await this.d.signIns.retireLinks(userId, purpose, now);
    const token = generateSecret(purpose === 'invitation' ? 'pfi' : 'pfr');
    await this.d.signIns.insertLink({ tokenHash: sha256Hex(token), userId, purpose, createdAt: now, expiresAt: now + ttlMs });
    return token;
  }
}

/** The perPerson key of an address (the users table compares addresses without case). */
function personKey(email: string): string {
  return email.trim().toLowerCase();
}

const LINK_GONE: Readonly<Record<LinkPurpose, string>> = {
  invitation: 'this invitation link was used already or has expired: ask the person who invited you for a new one',
  passwordReset: 'this password reset link was used already or has expired: ask for a new one',
};
