// The error matrix of every write route of the build & project API: for each route (upload-file,
// distribute-file, set-active-build, enable, disable, end-session, settings PATCH, test-webhook)
// each refusal row of the spec (Authentication; Errors: HTTP status codes, causes, POST rows;
// Limits) is its own named test, asserting the exact status and the exact `{ message }` body.
// Messages are written out as the spec states them; where the spec names a status but no
// message (READONLY member, expired subscription) the catalog's text (errors.ts) is asserted.
//
// One control plane per route (describe block) on a ManualClock that never moves, so a
// Retry-After is exact; every test uses accounts of its own, so no build-call window is shared
// between tests.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ManualClock } from '@pixelfleet/common';
import { answer, expectNoKeysLogged, startApiFixture, type Account, type ApiFixture } from './api-fixture';
import { seedBuild } from '../support/seed';

/** One request: path under `{api_url}` and its JSON body. */
interface Call {
  path: string;
  body: Record<string, unknown>;
}

interface WriteRoute {
  /** `METHOD path` as the test names show it. */
  name: string;
  method: 'POST' | 'PATCH';
  /** In the shared 2-minute build-call window (README: "write, build call"). */
  buildCall: boolean;
  /** Required body fields, each omitted in its own 400 row (apiKey: see the note at the rows). */
  required: string[];
  /** Status of the unchanged valid request (test-webhook: 404, no webhook URL is configured). */
  passStatus: number;
  /** Body of that answer when it is a refusal (test-webhook). */
  passBody?: unknown;
  /** A request of `a` on a.projectId that passes every check (seeds the build or session it names). */
  valid(f: ApiFixture, a: Account): Call;
}

const FILE_URL = 'http://127.0.0.1:9/build.zip';
const creds = (a: { apiKey: string; userId: string }) => ({ apiKey: a.apiKey, userId: a.userId });

let seeded = 0;
/** A build in `Ready` seeded through the builds repository: an upload through the API would use the window. */
function seedReadyBuild(f: ApiFixture, projectId: string): string {
  seeded += 1;
  const uploadId = `upl_matrix_${process.pid}_${seeded}`;
  seedBuild(f.t.cp, { uploadId, projectId, fileUrl: FILE_URL, status: 'Ready', createdAt: Date.now() });
  return uploadId;
}

const distribute = (path: string): WriteRoute => ({
  name: `POST ${path}`,
  method: 'POST',
  buildCall: true,
  required: ['userId', 'projectId', 'uploadId'],
  passStatus: 200,
  valid: (f, a) => ({ path, body: { ...creds(a), projectId: a.projectId, uploadId: seedReadyBuild(f, a.projectId) } }),
});

const control = (path: string): WriteRoute => ({
  name: `POST ${path}`,
  method: 'POST',
  buildCall: false,
  required: ['userId', 'projectId'],
  passStatus: 200,
  valid: (_f, a) => ({ path, body: { ...creds(a), projectId: a.projectId } }),
});

const UPLOAD_FILE: WriteRoute = {
  name: 'POST /projects/upload-file',
  method: 'POST',
  buildCall: true,
  required: ['userId', 'projectId', 'fileUrl'],
  passStatus: 201,
  valid: (_f, a) => ({ path: '/projects/upload-file', body: { ...creds(a), projectId: a.projectId, fileUrl: FILE_URL } }),
};

const ROUTES: WriteRoute[] = [
  UPLOAD_FILE,
  distribute('/projects/distribute-file'),
  distribute('/projects/set-active-build'),
  control('/projects/enable'),
  control('/projects/disable'),
  {
    name: 'POST /projects/end-session',
    method: 'POST',
    buildCall: false,
    required: ['userId', 'projectId', 'sessionId'],
    passStatus: 200,
    valid: (f, a) => ({
      path: '/projects/end-session',
      body: { ...creds(a), projectId: a.projectId, sessionId: f.t.cp.sessions.create(f.t.cp.accounts.requireProject(a.projectId)).session.sessionId },
    }),
  },
  {
    name: 'PATCH /projects/{projectId}/settings',
    method: 'PATCH',
    buildCall: false,
    // projectId is the path parameter; the body's required fields are the credentials.
    required: ['userId'],
    passStatus: 200,
    valid: (_f, a) => ({ path: `/projects/${a.projectId}/settings`, body: { ...creds(a), fps: 30 } }),
  },
  {
    ...control('/projects/test-webhook'),
    // Spec: "test webhook returns 404 when no webhook URL is configured for the project".
    passStatus: 404,
    passBody: { message: 'Webhook URL not configured' },
  },
];

const JSON_TYPE = { 'content-type': 'application/json' };

function send(f: ApiFixture, route: WriteRoute, call: Call, headers: Record<string, string> = JSON_TYPE) {
  return f.inject({ method: route.method, url: `/api${call.path}`, headers, payload: JSON.stringify(call.body) });
}

interface ErrorRow {
  name: string;
  status: number;
  message: string;
  /** The refused request: the route's valid request with one thing changed. */
  arrange(f: ApiFixture, route: WriteRoute): Promise<{ call: Call; headers?: Record<string, string> }>;
}

/** The rows every write route shares. */
function errorRows(route: WriteRoute): ErrorRow[] {
  const rows: ErrorRow[] = [
    {
      // Spec, POST endpoints: "401 `Invalid User` when `userId` does not match the key's owner".
      name: "401 Invalid User: userId names another account than the key's owner",
      status: 401,
      message: 'Invalid User',
      arrange: async (f, r) => {
        const call = r.valid(f, await f.account());
        return { call: { ...call, body: { ...call.body, userId: (await f.user()).userId } } };
      },
    },
    {
      name: '401 Invalid User: userId matches no account',
      status: 401,
      message: 'Invalid User',
      arrange: async (f, r) => {
        const call = r.valid(f, await f.account());
        return { call: { ...call, body: { ...call.body, userId: 'usr_nobody' } } };
      },
    },
    {
      // Spec, HTTP status codes: 401 "Key missing or invalid", example `Unauthorized: Invalid API Key`.
      name: '401 Unauthorized: Invalid API Key: mistyped key',
      status: 401,
      message: 'Unauthorized: Invalid API Key',
      arrange: async (f, r) => {
        const call = r.valid(f, await f.account());
        return { call: { ...call, body: { ...call.body, apiKey: 'pfk_wrong' } } };
      },
    },
    {
      // Spec, Authentication 2: "Requesting a new key immediately invalidates the previous key."
      name: '401 Unauthorized: Invalid API Key: previous key after a rotation',
      status: 401,
      message: 'Unauthorized: Invalid API Key',
      arrange: async (f, r) => {
        const a = await f.account();
        await f.rotate(a.userId);
        return { call: r.valid(f, a) };
      },
    },
    {
      // Spec, POST endpoints: "403 `Forbidden` when the key owner has no access to the project".
      name: '403 Forbidden: project of another account',
      status: 403,
      message: 'Forbidden',
      arrange: async (f, r) => {
        const a = await f.account();
        const call = r.valid(f, await f.account());
        return { call: { ...call, body: { ...call.body, ...creds(a) } } };
      },
    },
    {
      // Spec, key scope: READONLY is "Read endpoints only"; no message given, the catalog's readOnlyAccess.
      name: '403 Forbidden: read-only access: READONLY member',
      status: 403,
      message: 'Forbidden: read-only access',
      arrange: async (f, r) => {
        const a = await f.account();
        const member = await f.user();
        await f.t.cp.accounts.addMember(a.projectId, member.userId, 'READONLY');
        const call = r.valid(f, a);
        return { call: { ...call, body: { ...call.body, ...creds(member) } } };
      },
    },
    {
      // Spec, causes of 403: "subscription expired so writes are blocked"; no message given, the catalog's subscriptionInactive.
      name: '403 Forbidden: subscription is not active: expired subscription',
      status: 403,
      message: 'Forbidden: subscription is not active',
      arrange: async (f, r) => {
        const a = await f.account();
        f.t.cp.accounts.setSubscriptionStatus(a.projectId, 'expired');
        return { call: r.valid(f, a) };
      },
    },
    {
      // Spec, Endpoints: "any other content type returns 415"; message from HTTP status codes.
      name: '415 Content-Type must be application/json: text/plain',
      status: 415,
      message: 'Content-Type must be application/json',
      arrange: async (f, r) => ({ call: r.valid(f, await f.account()), headers: { 'content-type': 'text/plain' } }),
    },
    {
      // Spec, HTTP status codes: 415 "Content type missing or not `application/json`".
      name: '415 Content-Type must be application/json: no Content-Type header',
      status: 415,
      message: 'Content-Type must be application/json',
      arrange: async (f, r) => ({ call: r.valid(f, await f.account()), headers: {} }),
    },
  ];
  // apiKey is left out on purpose: the spec lists it as a required body field (400 "required
  // field omitted") and also "key missing" as a cause of 401, so its row is ambiguous.
  for (const field of route.required) {
    rows.push({
      // Spec, HTTP status codes: 400 "Missing or invalid field", example `Missing required field: fileUrl`.
      name: `400 Missing required field: ${field}`,
      status: 400,
      message: `Missing required field: ${field}`,
      arrange: async (f, r) => {
        const call = r.valid(f, await f.account());
        const { [field]: _omitted, ...body } = call.body;
        return { call: { ...call, body } };
      },
    });
  }
  return rows;
}

const RATE_LIMITED = { message: 'Rate limit exceeded. Try again in 2 minutes.' };

// Tuples with %s, not objects with $name: vitest quotes a $name value and cuts it at 40 characters.
describe.each(ROUTES.map((r) => [r.name, r] as const))('%s', (_name, route) => {
  const clock = new ManualClock();
  let f: ApiFixture;

  beforeAll(async () => {
    f = await startApiFixture({ clock, withoutPipeline: true });
  });
  afterAll(async () => {
    await f.close();
  });

  it(`baseline: the unchanged valid request answers ${route.passStatus}`, async () => {
    const res = await send(f, route, route.valid(f, await f.account()));
    expect(res.statusCode).toBe(route.passStatus);
    if (route.passBody !== undefined) expect(res.json()).toEqual(route.passBody);
  });

  it.each(errorRows(route).map((r) => [r.name, r] as const))('%s', async (_name, row) => {
    const { call, headers } = await row.arrange(f, route);
    expect(answer(await send(f, route, call, headers))).toEqual([row.status, { message: row.message }]);
  });

  it('500 Internal server error: unexpected failure inside the route (SQLite: projects table gone)', async () => {
    const call = route.valid(f, await f.account());
    // Raw SQL on purpose: no repository call can fail this way. As in project-routes.test.ts, the
    // table the routes read after the key check is renamed away, so the project lookup throws a SqliteError.
    f.t.cp.db.exec('ALTER TABLE projects RENAME TO projects_gone');
    try {
      const res = await send(f, route, call);
      expect(answer(res)).toEqual([500, { message: 'Internal server error' }]);
      expect(res.body).not.toContain('projects');
    } finally {
      f.t.cp.db.exec('ALTER TABLE projects_gone RENAME TO projects');
    }
    expect(f.t.logs.text()).toContain('no such table: projects');
  });

  if (route.buildCall) {
    // Spec, Limits: "1 request per 2 minutes, per `userId`"; the README adds set-active-build to
    // the shared window and a Retry-After in seconds.
    it('429 Rate limit exceeded. Try again in 2 minutes.: a second call within the window, with Retry-After', async () => {
      const a = await f.account();
      expect((await send(f, route, route.valid(f, a))).statusCode).toBe(route.passStatus);
      const res = await send(f, route, route.valid(f, a));
      expect(answer(res)).toEqual([429, RATE_LIMITED]);
      expect(res.headers['retry-after']).toBe('120');
    });

    const others = ROUTES.filter((r) => r.buildCall && r !== route).map((r) => [r.name, r] as const);
    it.each(others)('429 Rate limit exceeded. Try again in 2 minutes.: after an accepted %s (shared window)', async (_name, first) => {
      const a = await f.account();
      expect((await send(f, first, first.valid(f, a))).statusCode).toBe(first.passStatus);
      const res = await send(f, route, route.valid(f, a));
      expect(answer(res)).toEqual([429, RATE_LIMITED]);
      expect(res.headers['retry-after']).toBe('120');
    });
  } else {
    // Spec, Limits: other build and project API endpoints have "No fixed limit".
    it(`not a build call: answers ${route.passStatus} twice right after an accepted upload-file of the same user`, async () => {
      const a = await f.account();
      expect((await send(f, UPLOAD_FILE, UPLOAD_FILE.valid(f, a))).statusCode).toBe(201);
      for (let i = 0; i < 2; i++) expect((await send(f, route, route.valid(f, a))).statusCode).toBe(route.passStatus);
    });
  }

  it('never logs a key (every request of this block)', () => {
    expectNoKeysLogged(f);
  });
});
