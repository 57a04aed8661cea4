// A browser's side of the dashboard's API, for HTTP-level tests: a cookie jar for one origin, the
// Origin header it sends, and the CSRF token it fetched, as the dashboard app sends them.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { TestControlPlane } from './control-plane';
import { mailBody, mailHeader } from './smtp-receiver';

/** A browser's cookie jar for one origin, and its requests. */
export class DashboardClient {
  readonly cookies = new Map<string, string>();
  /** The Set-Cookie lines of the last response. */
  lastSetCookie: string[] = [];
  csrfToken = '';

  /** origin: the Origin header sent (the dashboard's own, or another site's); server: where requests go (default: origin). */
  constructor(
    private readonly origin: string,
    private readonly server: string = origin,
  ) {}

  async request(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<{ status: number; json: Record<string, unknown>; headers: Headers }> {
    const res = await fetch(`${this.server}${path}`, {
      method,
      headers: {
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        ...(this.cookies.size > 0 ? { cookie: [...this.cookies].map(([k, v]) => `${k}=${v}`).join('; ') } : {}),
        origin: this.origin,
        ...headers,
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    this.lastSetCookie = res.headers.getSetCookie();
    for (const line of this.lastSetCookie) {
      const [pair] = line.split(';');
      const [name, value] = pair!.split('=');
      if (value === '' || /Expires=Thu, 01 Jan 1970/.test(line)) this.cookies.delete(name!);
      else this.cookies.set(name!, value!);
    }
    const text = await res.text();
    return { status: res.status, json: text === '' ? {} : (JSON.parse(text) as Record<string, unknown>), headers: res.headers };
  }

  async fetchCsrf(): Promise<void> {
    const r = await this.request('GET', '/dashboard/api/csrf');
    expect(r.status).toBe(200);
    this.csrfToken = r.json.csrfToken as string;
  }

  post(path: string, body?: unknown): ReturnType<DashboardClient['request']> {
    return this.request('POST', path, body ?? {}, { 'x-csrf-token': this.csrfToken });
  }

  patch(path: string, body: unknown): ReturnType<DashboardClient['request']> {
    return this.request('PATCH', path, body, { 'x-csrf-token': this.csrfToken });
  }
}

/**
 * Invites `email` (no SMTP configured: the mail is an .eml file in the outbox folder) and sets
 * their password through the mailed link, as the set-password page would; returns their user id.
 */
export async function invitedWithPassword(t: TestControlPlane, email: string, password: string): Promise<string> {
  const { user } = await t.cp.people.invite(email);
  await t.cp.mail.idle();
  const outbox = join(t.dataDir, 'outbox');
  const mail = readdirSync(outbox)
    .sort()
    .map((name) => readFileSync(join(outbox, name), 'utf8'))
    .findLast((raw) => mailHeader(raw, 'To') === email);
  const token = mail === undefined ? undefined : /set-password#token=(pfi_[A-Za-z0-9_-]+)/.exec(mailBody(mail))?.[1];
  if (token === undefined) throw new Error(`no invitation to ${email} in ${outbox}`);
  await t.cp.people.setPasswordWithLink(token, 'invitation', password);
  return user.userId;
}

/** A person invited with `password` and signed in to the dashboard: their client (CSRF token held) and user id. */
export async function signedInPerson(t: TestControlPlane, email: string, password: string): Promise<{ client: DashboardClient; userId: string }> {
  const client = new DashboardClient(t.started.httpOrigin);
  await client.fetchCsrf();
  const userId = await invitedWithPassword(t, email, password);
  const signIn = await client.post('/dashboard/api/sign-in', { email, password });
  if (signIn.status !== 200) throw new Error(`sign-in of ${email} answered ${signIn.status}`);
  return { client, userId };
}
