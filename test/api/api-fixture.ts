// A control plane for route tests: real SQLite file, the app's own fastify instance driven with
// inject(), accounts made through the real account service. Every key issued is remembered, so
// a test can check that none of them ever reached the logs.
import type { InjectOptions, LightMyRequestResponse } from 'fastify';
import { expect } from 'vitest';
import type { Clock } from '@pixelfleet/common';
import { startTestControlPlane, type TestControlPlane } from '../support/control-plane';

export interface Account {
  userId: string;
  apiKey: string;
  projectId: string;
}

export interface ApiFixture {
  t: TestControlPlane;
  /** Every API key issued through this fixture. */
  keys: string[];
  /** A user with a key and one project (europe). */
  account(): Promise<Account>;
  /** A user with a key and no project. */
  user(): Promise<{ userId: string; apiKey: string }>;
  /** A new key for the user (the old one stops working). */
  rotate(userId: string): Promise<string>;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
  get(path: string, query: Record<string, string | string[]>): Promise<LightMyRequestResponse>;
  post(path: string, body: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  patch(path: string, body: unknown, headers?: Record<string, string>): Promise<LightMyRequestResponse>;
  close(): Promise<void>;
}

let counter = 0;

export async function startApiFixture(options: { clock?: Clock; overrides?: Record<string, unknown>; withoutPipeline?: boolean } = {}): Promise<ApiFixture> {
  const t = await startTestControlPlane({
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.withoutPipeline ? { withoutPipeline: true } : {}),
    overrides: { limits: { fairUseBurst: 100_000, fairUsePerSecond: 100_000, fairUseAddressBurst: 100_000, fairUseAddressPerSecond: 100_000 }, ...options.overrides },
  });
  const keys: string[] = [];
  const user = async () => {
    counter += 1;
    const u = await t.cp.accounts.createUser(`api${counter}-${process.pid}@example.com`);
    const apiKey = await t.cp.accounts.issueKey(u.userId);
    keys.push(apiKey);
    return { userId: u.userId, apiKey };
  };
  const body = (b: unknown) => (typeof b === 'string' ? b : JSON.stringify(b));
  return {
    t,
    keys,
    user,
    async account() {
      const u = await user();
      const p = await t.cp.accounts.createProject(u.userId, `Project ${counter}`, 'europe');
      return { ...u, projectId: p.projectId };
    },
    async rotate(userId) {
      const apiKey = await t.cp.accounts.issueKey(userId);
      keys.push(apiKey);
      return apiKey;
    },
    inject: (o) => t.cp.http.inject(o),
    get: (path, query) => t.cp.http.inject({ method: 'GET', url: `/api${path}`, query }),
    post: (path, b, headers = { 'content-type': 'application/json' }) => t.cp.http.inject({ method: 'POST', url: `/api${path}`, headers, payload: body(b) }),
    patch: (path, b, headers = { 'content-type': 'application/json' }) => t.cp.http.inject({ method: 'PATCH', url: `/api${path}`, headers, payload: body(b) }),
    close: () => t.destroy(),
  };
}

/** Status and JSON body of a response, for one-line assertions. */
export function answer(res: LightMyRequestResponse): [number, unknown] {
  return [res.statusCode, res.json<unknown>()];
}

/** No key issued by the fixture appears anywhere in the captured log output. */
export function expectNoKeysLogged(f: ApiFixture): void {
  const text = f.t.logs.text();
  expect(f.t.logs.lines.length).toBeGreaterThan(0);
  for (const key of f.keys) {
    expect(text).not.toContain(key);
    // The base64url body alone (without the pfk_ prefix) must not leak either.
    expect(text).not.toContain(key.slice(4));
  }
}
