// The dashboard's sign-in, under `<dashboard>/api` (publicUrls.dashboard's path): sign in with
// e-mail address and password, sign out (here, or everywhere), who am I, set a password through a
// mailed link, ask for a reset link, change the password. The session token lives only in an
// HttpOnly, SameSite=Lax cookie scoped to the dashboard's path (Secure unless the dashboard is plain
// HTTP on this machine). Every state-changing request needs the CSRF token of GET …/api/csrf
// (@fastify/csrf-protection, its secret in a cookie of its own) and, when the browser names one,
// the dashboard's own Origin: a page of another site can neither sign someone in nor act for them.
import fastifyCookie from '@fastify/cookie';
import fastifyCsrf from '@fastify/csrf-protection';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { DashboardMe } from '@pixelfleet/dashboard';
import { isLoopbackHost } from '@pixelfleet/common';
import { ApiError } from '../../errors';
import { clientBlock } from '../../lib/ip-address';
import type { User } from '../../repositories/users';
import type { PeopleService } from '../../people/people-service';
import { SESSION_MAX_MS } from '../../people/people-service';
import { MAX_PASSWORD_CHARS } from '../../people/passwords';
import { bodyObject, requiredString } from '../api/request-fields';
import type { FairUse } from '../fair-use';

/** The cookie that carries a dashboard sign-in's token. */
export const SESSION_COOKIE = 'pf_session';
/** The cookie that carries the CSRF secret (the token itself travels in a header). */
export const CSRF_COOKIE = 'pf_csrf';
/** The header a state-changing request carries the CSRF token in. */
export const CSRF_HEADER = 'x-csrf-token';

export interface DashboardAuthDeps {
  people: PeopleService;
  /** The HTTP API's fair use per client address: every dashboard request takes from the same budget. */
  fairUse: Pick<FairUse, 'onRequest'>;
  /** publicUrls.dashboard, once the server listens. */
  dashboardUrl: () => string;
}

/** Where the dashboard lives, as its routes and cookies need it. */
interface DashboardPlace {
  origin: string;
  path: string;
  secureCookies: boolean;
}

function placeOf(dashboardUrl: string): DashboardPlace {
  const url = new URL(dashboardUrl);
  return { origin: url.origin, path: url.pathname.replace(/\/+$/, '') || '/', secureCookies: url.protocol === 'https:' || !isLoopbackHost(url.hostname) };
}

/** What every other dashboard route checks: a state-changing request is the dashboard's own, and who is signed in. */
export interface DashboardGuards {
  /** A preHandler: 403 for another site's Origin or a missing or wrong CSRF token. */
  readonly sameSite: (req: FastifyRequest, reply: FastifyReply) => Promise<void>;
  /** The signed-in person and their session token; 401 `Not signed in` otherwise. */
  readonly signedInUser: (req: FastifyRequest) => Promise<{ user: User; token: string }>;
  /** An onRequest hook: the client address's fair-use budget (429 with Retry-After when spent). */
  readonly limited: FairUse['onRequest'];
}

export async function registerDashboardAuthRoutes(app: FastifyInstance, deps: DashboardAuthDeps, basePath = '/dashboard'): Promise<DashboardGuards> {
  const place = (): DashboardPlace => placeOf(deps.dashboardUrl());
  await app.register(fastifyCookie);
  await app.register(fastifyCsrf, {
    cookieKey: CSRF_COOKIE,
    // Not a credential (a page needs the token too); on every path, since the public path may not be basePath behind a proxy.
    cookieOpts: { httpOnly: true, sameSite: 'strict', path: '/', signed: false },
    getToken: (req) => headerValue(req, CSRF_HEADER),
  });

  /** Refuses a state-changing request from another site: its Origin (when the browser sends one), then the CSRF token. */
  const sameSite = async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    const origin = headerValue(req, 'origin');
    if (origin !== undefined && origin !== place().origin) throw new ApiError('dashboardCrossSite');
    // The plugin's check is synchronous and answers a refusal itself (reply.send, its own message):
    // it is handed a view of the reply whose send only notes the refusal, answered here from the catalogue.
    let passed = false;
    const noteRefusal = Object.assign(Object.create(reply) as FastifyReply, { send: () => reply });
    app.csrfProtection(req, noteRefusal, () => {
      passed = true;
    });
    if (!passed) throw new ApiError('dashboardCsrfInvalid');
  };

  // Every dashboard request, signed in or not, takes from its client address's fair-use budget first.
  const limited = deps.fairUse.onRequest;

  const sessionToken = (req: FastifyRequest): string | undefined => req.cookies[SESSION_COOKIE];
  const signedInUser = async (req: FastifyRequest): Promise<{ user: User; token: string }> => {
    const token = sessionToken(req);
    const user = token === undefined ? undefined : await deps.people.userOfSession(token);
    if (token === undefined || user === undefined) throw new ApiError('dashboardNotSignedIn');
    return { user, token };
  };
  const setSessionCookie = (reply: FastifyReply, token: string): void => {
    const { path, secureCookies } = place();
    void reply.setCookie(SESSION_COOKIE, token, { httpOnly: true, secure: secureCookies, sameSite: 'lax', path, maxAge: SESSION_MAX_MS / 1000 });
  };
  const clearSessionCookie = (reply: FastifyReply): void => {
    const { path, secureCookies } = place();
    void reply.clearCookie(SESSION_COOKIE, { httpOnly: true, secure: secureCookies, sameSite: 'lax', path });
  };
  const me = async (user: User, token?: string): Promise<DashboardMe> => ({ userId: user.userId, email: user.email, operator: token !== undefined && (await deps.people.isOperatorSession(token)) });
  // Answers carry sign-in state: no cache keeps them.
  const noStore = (reply: FastifyReply): FastifyReply => reply.header('cache-control', 'no-store');

  app.get(`${basePath}/api/csrf`, { onRequest: limited }, async (_req, reply) => noStore(reply).send({ csrfToken: reply.generateCsrf() }));

  app.post(`${basePath}/api/sign-in`, { onRequest: limited, preHandler: sameSite }, async (req, reply) => {
    const body = bodyObject(req.body);
    const email = requiredString(body, 'email', 254);
    const password = requiredString(body, 'password', MAX_PASSWORD_CHARS);
    const outcome = await deps.people.signIn(email, password, clientBlock(req.ip));
    if (outcome.kind === 'throttled') throw new ApiError('dashboardSignInThrottled', { seconds: outcome.retryAfterSeconds }, { 'retry-after': String(outcome.retryAfterSeconds) });
    if (outcome.kind === 'refused') throw new ApiError('dashboardSignInRefused');
    setSessionCookie(reply, outcome.token);
    return noStore(reply).send(await me(outcome.user));
  });

  app.get(`${basePath}/api/me`, { onRequest: limited }, async (req, reply) => {
    const { user, token } = await signedInUser(req);
    return noStore(reply).send(await me(user, token));
  });

  app.post(`${basePath}/api/sign-out`, { onRequest: limited, preHandler: sameSite }, async (req, reply) => {
    const token = sessionToken(req);
    if (token !== undefined) await deps.people.signOut(token);
    clearSessionCookie(reply);
    return reply.status(204).send();
  });

  app.post(`${basePath}/api/sign-out-everywhere`, { onRequest: limited, preHandler: sameSite }, async (req, reply) => {
    const { user } = await signedInUser(req);
    const ended = await deps.people.signOutEverywhere(user.userId);
    clearSessionCookie(reply);
    return noStore(reply).send({ signInsEnded: ended });
  });

  app.post(`${basePath}/api/set-password`, { onRequest: limited, preHandler: sameSite }, async (req, reply) => {
    const body = bodyObject(req.body);
    const token = requiredString(body, 'token', 200);
    const purpose = requiredString(body, 'purpose');
    if (purpose !== 'invitation' && purpose !== 'passwordReset') throw new ApiError('invalidField', { detail: 'purpose must be invitation or passwordReset' });
    const user = await deps.people.setPasswordWithLink(token, purpose, requiredString(body, 'password', MAX_PASSWORD_CHARS + 1));
    return noStore(reply).send(await me(user));
  });

  app.post(`${basePath}/api/password-reset`, { onRequest: limited, preHandler: sameSite }, async (req, reply) => {
    const outcome = await deps.people.requestPasswordReset(requiredString(bodyObject(req.body), 'email', 254), clientBlock(req.ip));
    if (outcome.kind === 'throttled') throw new ApiError('dashboardPasswordResetThrottled', { seconds: outcome.retryAfterSeconds }, { 'retry-after': String(outcome.retryAfterSeconds) });
    // The same answer whether or not the address has an account.
    return reply.status(202).send({ message: 'If the address has an account, a link to reset its password is on its way.' });
  });

  app.post(`${basePath}/api/password`, { onRequest: limited, preHandler: sameSite }, async (req, reply) => {
    const body = bodyObject(req.body);
    const { token } = await signedInUser(req);
    await deps.people.changePassword(token, requiredString(body, 'currentPassword', MAX_PASSWORD_CHARS + 1), requiredString(body, 'newPassword', MAX_PASSWORD_CHARS + 1));
    return reply.status(204).send();
  });

  return { sameSite, signedInUser, limited };
}

function headerValue(req: FastifyRequest, name: string): string | undefined {
  const value = req.headers[name];
  return typeof value === 'string' ? value : undefined;
}
