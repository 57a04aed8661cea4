// A project's sessions and their start-ups per UTC day, in PostgreSQL; the SQLite twin is
// ../session-daily.ts, whose header explains the two rollups. Days and buckets are computed here,
// in JavaScript, exactly as there (floor(createdAt / DAY_MS), startupBucket).
import { DAY_MS } from '../session-dimensions';
import { medianBucket, startupBucket, startupOfBucket, type SessionDailyRepository, type SessionDay } from '../session-daily';
import { changesOf, rowsOf, type Queryable } from './postgres-sql';

export class PostgresSessionDailyRepository implements SessionDailyRepository {
  /** db: the pool, or the connection of the transaction creating the session or moving it to Running (the records belong in it). */
  constructor(private readonly db: Queryable) {}

  async recordCreated(projectId: string, createdAt: number): Promise<void> {
    await this.db.query(
      'INSERT INTO session_days (project_id, day, sessions) VALUES ($1, $2, 1) ON CONFLICT (project_id, day) DO UPDATE SET sessions = session_days.sessions + 1',
      [projectId, Math.floor(createdAt / DAY_MS)],
    );
  }

  async recordStartup(projectId: string, createdAt: number, startupMs: number): Promise<void> {
    await this.db.query(
      `INSERT INTO session_startup_days (project_id, day, bucket, sessions) VALUES ($1, $2, $3, 1)
       ON CONFLICT (project_id, day, bucket) DO UPDATE SET sessions = session_startup_days.sessions + 1`,
      [projectId, Math.floor(createdAt / DAY_MS), startupBucket(startupMs)],
    );
  }

  async days(projectId: string, fromMs: number, toMs: number): Promise<SessionDay[]> {
    const range = [projectId, Math.floor(fromMs / DAY_MS), Math.floor(toMs / DAY_MS)];
    const buckets = new Map<number, { bucket: number; sessions: number }[]>();
    const startups = await rowsOf<{ day: number; bucket: number; sessions: number }>(
      this.db,
      'SELECT day, bucket, sessions FROM session_startup_days WHERE project_id = $1 AND day >= $2 AND day <= $3 ORDER BY day, bucket',
      range,
    );
    for (const r of startups) {
      const list = buckets.get(r.day) ?? [];
      list.push(r);
      buckets.set(r.day, list);
    }
    const days = await rowsOf<{ day: number; sessions: number }>(this.db, 'SELECT day, sessions FROM session_days WHERE project_id = $1 AND day >= $2 AND day <= $3 ORDER BY day', range);
    return days.map((r) => {
      const day = buckets.get(r.day) ?? [];
      const started = day.reduce((n, b) => n + b.sessions, 0);
      return { dayStartMs: r.day * DAY_MS, sessions: r.sessions, started, medianStartupMs: started === 0 ? null : Math.round(startupOfBucket(medianBucket(day, started))) };
    });
  }

  async deleteDaysBefore(beforeDay: number, limit: number): Promise<number> {
    const days = await changesOf(this.db, 'DELETE FROM session_days WHERE (project_id, day) IN (SELECT project_id, day FROM session_days WHERE day < $1 LIMIT $2)', [beforeDay, limit]);
    if (days >= limit) return days;
    return (
      days +
      (await changesOf(
        this.db,
        `DELETE FROM session_startup_days WHERE (project_id, day, bucket) IN
           (SELECT project_id, day, bucket FROM session_startup_days WHERE day < $1 LIMIT $2)`,
        [beforeDay, limit - days],
      ))
    );
  }
}
