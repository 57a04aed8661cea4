// A project's sessions per UTC day and the start-up times of each day's sessions, for the
// audience page's two daily charts: session_days counts every session by the day it was created;
// session_startup_days counts, by that same day, each session that reached Running in a bucket of
// its start-up (Starting → Running) 5 % wide, from which the day's median is read. Both are kept
// current in the transactions that create a session and move it to Running
// (repositories/sessions.ts), so 92 days read at most 92 rows and 92 × (buckets in use) rows,
// whatever the number of sessions.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';
import { DAY_MS } from './session-dimensions';

/** Width of a start-up bucket: bucket b holds start-ups in [STEP^b, STEP^(b+1)) ms. */
const STARTUP_BUCKET_STEP = 1.05;

/** The bucket of a start-up (ms); 0 and below count as 1 ms. The SQL of migration 21 computes the same. */
export function startupBucket(ms: number): number {
  return Math.floor(Math.log(Math.max(1, ms)) / Math.log(STARTUP_BUCKET_STEP));
}

/** The start-up a bucket stands for: the geometric middle of its range (within 2.5 % of any start-up in it). */
export function startupOfBucket(bucket: number): number {
  return STARTUP_BUCKET_STEP ** (bucket + 0.5);
}

export interface SessionDay {
  /** The UTC day's first instant (ms since the epoch). */
  dayStartMs: number;
  /** Sessions created that day. */
  sessions: number;
  /** Of those, sessions that reached Running (and so have a start-up). */
  started: number;
  /** The median start-up of the day's started sessions (ms, within 2.5 %); null when none started. */
  medianStartupMs: number | null;
}

export interface SessionDailyRepository {
  /** Counts a new session in its day; called inside the transaction inserting the session. */
  recordCreated(projectId: string, createdAt: number): Promise<void>;
  /** Counts a session's start-up in its creation day; called inside the transaction moving it to Running. */
  recordStartup(projectId: string, createdAt: number, startupMs: number): Promise<void>;
  /** The days of [fromMs, toMs] (whole UTC days, the ones the window touches), oldest first; a day with no session is absent. */
  days(projectId: string, fromMs: number, toMs: number): Promise<SessionDay[]>;
  /** Deletes at most limit rows of days before beforeDay (a day number); returns how many. */
  deleteDaysBefore(beforeDay: number, limit: number): Promise<number>;
}

export class SqliteSessionDailyRepository implements Sync<SessionDailyRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      created: db.prepare(
        'INSERT INTO session_days (project_id, day, sessions) VALUES (?, ?, 1) ON CONFLICT (project_id, day) DO UPDATE SET sessions = sessions + 1',
      ),
      startup: db.prepare(
        `INSERT INTO session_startup_days (project_id, day, bucket, sessions) VALUES (?, ?, ?, 1)
         ON CONFLICT (project_id, day, bucket) DO UPDATE SET sessions = sessions + 1`,
      ),
      days: db.prepare('SELECT day, sessions FROM session_days WHERE project_id = ? AND day >= ? AND day <= ? ORDER BY day'),
      startups: db.prepare('SELECT day, bucket, sessions FROM session_startup_days WHERE project_id = ? AND day >= ? AND day <= ? ORDER BY day, bucket'),
      deleteDays: db.prepare('DELETE FROM session_days WHERE (project_id, day) IN (SELECT project_id, day FROM session_days WHERE day < ? LIMIT ?)'),
      deleteStartups: db.prepare(
        `DELETE FROM session_startup_days WHERE (project_id, day, bucket) IN
           (SELECT project_id, day, bucket FROM session_startup_days WHERE day < ? LIMIT ?)`,
      ),
    };
  }

  recordCreated(projectId: string, createdAt: number): void {
    this.stmts.created.run(projectId, Math.floor(createdAt / DAY_MS));
  }

  recordStartup(projectId: string, createdAt: number, startupMs: number): void {
    this.stmts.startup.run(projectId, Math.floor(createdAt / DAY_MS), startupBucket(startupMs));
  }

  days(projectId: string, fromMs: number, toMs: number): SessionDay[] {
    const fromDay = Math.floor(fromMs / DAY_MS);
    const toDay = Math.floor(toMs / DAY_MS);
    const buckets = new Map<number, { bucket: number; sessions: number }[]>();
    for (const r of this.stmts.startups.all(projectId, fromDay, toDay) as { day: number; bucket: number; sessions: number }[]) {
      const list = buckets.get(r.day) ?? [];
      list.push(r);
      buckets.set(r.day, list);
    }
    return (this.stmts.days.all(projectId, fromDay, toDay) as { day: number; sessions: number }[]).map((r) => {
      const day = buckets.get(r.day) ?? [];
      const started = day.reduce((n, b) => n + b.sessions, 0);
      return { dayStartMs: r.day * DAY_MS, sessions: r.sessions, started, medianStartupMs: started === 0 ? null : Math.round(startupOfBucket(medianBucket(day, started))) };
    });
  }

  deleteDaysBefore(beforeDay: number, limit: number): number {
    const days = this.stmts.deleteDays.run(beforeDay, limit).changes;
    if (days >= limit) return days;
    return days + this.stmts.deleteStartups.run(beforeDay, limit - days).changes;
  }
}

/** The bucket holding the middle start-up of a day (buckets in order; for an even count, the lower middle one). */
export function medianBucket(buckets: readonly { bucket: number; sessions: number }[], started: number): number {
  const middle = Math.ceil(started / 2);
  let seen = 0;
  for (const b of buckets) {
    seen += b.sessions;
    if (seen >= middle) return b.bucket;
  }
  throw new Error('a day with started sessions has a bucket holding its middle one');
}
