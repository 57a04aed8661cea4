// The fleet event log in PostgreSQL; the SQLite twin is ../events.ts.
import type { PostgresPool } from '../../db/postgres-database';
import { KeyedSerial } from '../../lib/keyed-serial';
import { fleetEventOf, type EventRow, type EventsRepository, type FleetEvent, type NewFleetEvent } from '../events';
import { changesOf, firstRowOf, rowsOf } from './postgres-sql';

export class PostgresEventsRepository implements EventsRepository {
  /**
   * Appends one at a time, each committed before the next begins: ids are drawn in append order
   * and become visible in that order, so a watcher reading `id > cursor` never passes over an
   * event of this process that commits late. (Several processes appending at once interleave
   * their ids; issue 27's replicas need more than this.)
   */
  private readonly appends = new KeyedSerial<'append'>();

  constructor(private readonly pool: PostgresPool) {}

  append(e: NewFleetEvent): Promise<FleetEvent> {
    return this.appends.run('append', async () => {
      const r = await firstRowOf<{ id: number }>(
        this.pool,
        'INSERT INTO events (type, occurred_at, worker_id, session_id, project_id, data) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id',
        [e.type, e.occurredAt, e.workerId ?? null, e.sessionId ?? null, e.projectId ?? null, JSON.stringify(e.data)],
      );
      return { ...e, eventId: r!.id };
    });
  }

  async listAfter(afterId: number, limit: number): Promise<FleetEvent[]> {
    const rows = await rowsOf<EventRow>(
      this.pool,
      'SELECT id, type, occurred_at, worker_id, session_id, project_id, data FROM events WHERE id > $1 ORDER BY id LIMIT $2',
      [afterId, limit],
    );
    return rows.map(fleetEventOf);
  }

  async lastId(): Promise<number> {
    return (await firstRowOf<{ id: number }>(this.pool, 'SELECT COALESCE(MAX(id), 0) AS id FROM events'))!.id;
  }

  deleteBefore(occurredBeforeMs: number, limit: number): Promise<number> {
    // Identity values are never reused after a deletion: a watcher's cursor never points at a reused id.
    return changesOf(this.pool, 'DELETE FROM events WHERE id IN (SELECT id FROM events WHERE occurred_at < $1 ORDER BY occurred_at LIMIT $2)', [occurredBeforeMs, limit]);
  }
}
