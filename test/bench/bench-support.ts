// Shared by the benches (first of all `bench:stream`'s parts): small number helpers, a seeded random source,
// and child processes driven by request/reply over IPC (a relay, an app or viewers in a process of
// their own, so each one's CPU is its own and no packet waits for another's event loop).
import { fork, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

export const waitMs = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

export function percentile(values: readonly number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return NaN;
  const rank = (p / 100) * (sorted.length - 1);
  const lo = Math.floor(rank);
  const hi = Math.ceil(rank);
  return (sorted[lo] ?? NaN) + ((sorted[hi] ?? NaN) - (sorted[lo] ?? NaN)) * (rank - lo);
}
export const median = (values: readonly number[]): number => percentile(values, 50);

/** Deterministic pseudo-random numbers in [0, 1) (mulberry32): two runs with one seed draw the same. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
export const f = (v: number, digits = 1): string => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');
export const mbps = (bps: number): string => `${f(bps / 1e6, 2)} Mbps`;

export async function until<T>(read: () => T | undefined | Promise<T | undefined>, what: string, timeoutMs: number, everyMs = 20): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const v = await read();
    if (v !== undefined) return v;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await waitMs(everyMs);
  }
}

/** A process's resident memory now (VmRSS) and at its peak (VmHWM), in MiB, from /proc (Linux). */
export function memoryMb(pid: number): { rssMb: number; peakMb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssMb: kb('VmRSS') / 1024, peakMb: kb('VmHWM') / 1024 };
}

/** The value after `name` on the command line, or `fallback`. */
export function arg(name: string, fallback: string): string {
  const at = process.argv.indexOf(name);
  return at >= 0 ? (process.argv[at + 1] ?? fallback) : fallback;
}

/** Requests to a child and its replies travel as `{ id, body }`; events as `{ event, data? }`. */
type ChildReply = { id: number; body?: unknown; error?: string } | { event: string; data?: unknown };

export interface BenchChildOptions {
  /** The script to fork (run with tsx) and its arguments, e.g. a child-mode flag. */
  script: string;
  args: string[];
  /** Extra Node flags (e.g. --cpu-prof). */
  execArgv?: string[];
  /** Names the child in errors. */
  label: string;
}

/** One bench child process, driven by request/reply over IPC. */
export class BenchChild<Request extends { type: string }> {
  private readonly proc: ChildProcess;
  private readonly label: string;
  private readonly replies = new Map<number, { resolve: (body: unknown) => void; reject: (err: Error) => void }>();
  private readonly waiters = new Map<string, () => void>();
  private readonly listeners = new Map<string, (data: unknown) => void>();
  private readonly seen = new Set<string>();
  private nextId = 0;
  private readonly exited: Promise<void>;

  constructor(options: BenchChildOptions) {
    this.label = options.label;
    this.proc = fork(options.script, options.args, { execArgv: ['--conditions=source', '--import', 'tsx', ...(options.execArgv ?? [])], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    this.exited = new Promise((r) => this.proc.once('exit', () => r()));
    this.proc.on('message', (raw) => {
      const m = raw as ChildReply;
      if ('event' in m) {
        this.seen.add(m.event);
        this.waiters.get(m.event)?.();
        this.listeners.get(m.event)?.(m.data);
        return;
      }
      const waiter = this.replies.get(m.id);
      this.replies.delete(m.id);
      if (m.error !== undefined) waiter?.reject(new Error(`${this.label} process: ${m.error}`));
      else waiter?.resolve(m.body);
    });
  }

  /** The child's process id (to tell its sockets from others'). */
  get pid(): number | undefined {
    return this.proc.pid;
  }

  request<T = undefined>(body: Request, timeoutMs = 20_000): Promise<T> {
    const id = this.nextId++;
    return new Promise<T>((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error(`no reply to ${body.type} within ${timeoutMs} ms`)), timeoutMs);
      this.replies.set(id, {
        resolve: (reply) => {
          clearTimeout(timer);
          resolvePromise(reply as T);
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      });
      this.proc.send({ id, body });
    });
  }

  /** Resolves when the child has reported `event` (also if it already has). */
  event(event: string, timeoutMs = 20_000): Promise<void> {
    if (this.seen.has(event)) return Promise.resolve();
    return new Promise((resolvePromise, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ${event} within ${timeoutMs} ms`)), timeoutMs);
      this.waiters.set(event, () => {
        clearTimeout(timer);
        resolvePromise();
      });
    });
  }

  /** Calls `listener` with the data of every later `event` (one listener per event name). */
  on(event: string, listener: ((data: unknown) => void) | undefined): void {
    if (listener) this.listeners.set(event, listener);
    else this.listeners.delete(event);
  }

  /** Disconnects; the child closes its peers and exits (killed after 5 s). */
  async close(): Promise<void> {
    if (this.proc.connected) this.proc.disconnect();
    await Promise.race([this.exited, waitMs(5_000)]);
    if (this.proc.exitCode === null && this.proc.signalCode === null) this.proc.kill('SIGKILL');
  }
}

/** The child side: answers each request with handle's result; closes and exits when the parent disconnects. */
export function serveParent<Request>(handle: (request: Request) => Promise<unknown>, close: () => Promise<void>): { emit(event: string, data?: unknown): void } {
  const send = (m: ChildReply): void => void process.send?.(m);
  process.on('message', (raw) => {
    const { id, body } = raw as { id: number; body: Request };
    handle(body).then(
      (reply) => send({ id, body: reply }),
      (err: unknown) => send({ id, error: err instanceof Error ? err.message : String(err) }),
    );
  });
  process.on('disconnect', () => {
    void close().finally(() => process.exit(0));
  });
  return { emit: (event, data) => send(data === undefined ? { event } : { event, data }) };
}
