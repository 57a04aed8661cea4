// The dashboard's calls to its own routes under `<base>/api`: JSON both ways, the session in its
// HttpOnly cookie (sent by the browser, never seen here), and the CSRF token every state-changing
// request carries, fetched once and again when the server says it is stale.

/** A refused call: the server's status and its message, as the error catalogue words it. */
export class ApiFailure extends Error {
  override readonly name = 'ApiFailure';
  constructor(
    readonly status: number,
    message: string,
    /** Seconds from a 429's Retry-After. */
    readonly retryAfterSeconds?: number,
  ) {
    super(message);
  }
}

/** The catalogue's message for a refused CSRF token (control-plane errors.ts `dashboardCsrfInvalid`). */
const CSRF_REFUSED = 'Missing or invalid CSRF token';

export class DashboardApi {
  private csrfToken: Promise<string> | undefined;

  /** onSignedOut: a call was refused because the sign-in is over (expired, or ended elsewhere). */
  constructor(
    private readonly basePath: string,
    private readonly onSignedOut: () => void = () => undefined,
  ) {}

  get<T>(path: string): Promise<T> {
    return this.call<T>('GET', path);
  }

  post<T>(path: string, body: unknown = {}): Promise<T> {
    return this.change<T>('POST', path, body);
  }

  patch<T>(path: string, body: unknown): Promise<T> {
    return this.change<T>('PATCH', path, body);
  }

  /** A state-changing call, with the CSRF token; once more with a fresh token if the server refused it. */
  private async change<T>(method: 'POST' | 'PATCH', path: string, body: unknown): Promise<T> {
    try {
      return await this.call<T>(method, path, body, await this.csrf());
    } catch (error) {
      if (!(error instanceof ApiFailure) || error.status !== 403 || error.message !== CSRF_REFUSED) throw error;
      this.csrfToken = undefined;
      return this.call<T>(method, path, body, await this.csrf());
    }
  }

  private csrf(): Promise<string> {
    this.csrfToken ??= this.call<{ csrfToken: string }>('GET', '/csrf').then(
      (answer) => answer.csrfToken,
      (error: unknown) => {
        this.csrfToken = undefined;
        throw error;
      },
    );
    return this.csrfToken;
  }

  private async call<T>(method: 'GET' | 'POST' | 'PATCH', path: string, body?: unknown, csrfToken?: string): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (csrfToken !== undefined) headers['x-csrf-token'] = csrfToken;
    let response: Response;
    try {
      response = await fetch(`${this.basePath}/api${path}`, { method, headers, credentials: 'same-origin', ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
    } catch {
      throw new ApiFailure(0, 'The control plane cannot be reached. Check your connection and try again.');
    }
    const text = await response.text();
    let json: unknown;
    try {
      json = text === '' ? {} : JSON.parse(text);
    } catch {
      json = {};
    }
    if (!response.ok) {
      // The sign-in ended under the page (idle, expired, signed out everywhere): back to sign-in, on this page.
      if (response.status === 401 && path !== '/me' && path !== '/sign-in') this.onSignedOut();
      const message = typeof (json as { message?: unknown }).message === 'string' ? (json as { message: string }).message : `The control plane answered ${response.status}.`;
      const retryAfter = Number(response.headers.get('retry-after'));
      throw new ApiFailure(response.status, message, Number.isFinite(retryAfter) && retryAfter > 0 ? retryAfter : undefined);
    }
    return json as T;
  }
}

/** What a refused call tells a person: the server's sentence, with the wait of a 429 when it did not say it. */
export function describeFailure(error: unknown): string {
  if (!(error instanceof ApiFailure)) return error instanceof Error ? error.message : String(error);
  if (error.status === 429 && error.retryAfterSeconds !== undefined && !/\d+ seconds?/.test(error.message)) return `${error.message} You can try again in ${error.retryAfterSeconds} s.`;
  return error.message;
}

/**
 * The setting a refusal names, for showing it beside its field: the catalogue words them
 * `Invalid field: <name> …` (settings) or `Invalid <name>: …` (a URL the policy refused).
 */
export function fieldOfFailure(error: unknown): string | undefined {
  if (!(error instanceof ApiFailure) || error.status !== 400) return undefined;
  return /^Invalid (?:field: )?([A-Za-z]+)/.exec(error.message)?.[1];
}
