// The fleet event log that operators follow with `pixelfleet admin events`.
import type { Db } from '../db/database';
import type { Sync } from '../store/promised';

export interface FleetEvent {
  eventId: number;
  type: string;
  occurredAt: number;
  workerId: string | undefined;
  sessionId: string | undefined;
  projectId: string | undefined;
  data: Record<string, unknown>;
}

export type NewFleetEvent = Omit<FleetEvent, 'eventId'>;

export interface EventsRepository {
  /** Stores the event; events appended by one process get increasing ids in the order appended. */
  append(e: NewFleetEvent): Promise<FleetEvent>;
  /** Events with an id above afterId, oldest first, at most limit. */
  listAfter(afterId: number, limit: number): Promise<FleetEvent[]>;
  lastId(): Promise<number>;
  /** Deletes at most limit events that occurred before occurredBeforeMs, oldest first; returns how many (retention). */
  deleteBefore(occurredBeforeMs: number, limit: number): Promise<number>;
}

export interface EventRow {
  id: number;
  type: string;
  occurred_at: number;
  worker_id: string | null;
  session_id: string | null;
  project_id: string | null;
  data: string;
}

/** A stored row as an event (both stores' rows read alike). */
export function fleetEventOf(r: EventRow): FleetEvent {
  return {
    eventId: r.id,
    type: r.type,
    occurredAt: r.occurred_at,
    workerId: r.worker_id ?? undefined,
    sessionId: r.session_id ?? undefined,
    projectId: r.project_id ?? undefined,
    data: JSON.parse(r.data) as Record<string, unknown>,
  };
}

export class SqliteEventsRepository implements Sync<EventsRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      append: db.prepare(
        'INSERT INTO events (type, occurred_at, worker_id, session_id, project_id, data) VALUES (?, ?, ?, ?, ?, ?) RETURNING id',
      ),
      after: db.prepare('SELECT id, type, occurred_at, worker_id, session_id, project_id, data FROM events WHERE id > ? ORDER BY id LIMIT ?'),
      last: db.prepare('SELECT COALESCE(MAX(id), 0) AS id FROM events'),
      // Ids keep growing after a deletion (AUTOINCREMENT): a watcher's cursor never points at a reused id.
      deleteBefore: db.prepare('DELETE FROM events WHERE id IN (SELECT id FROM events WHERE occurred_at < ? ORDER BY occurred_at LIMIT ?)'),
    };
  }

  append(e: NewFleetEvent): FleetEvent {
    const { id } = this.stmts.append.get(e.type, e.occurredAt, e.workerId ?? null, e.sessionId ?? null, e.projectId ?? null, JSON.stringify(e.data)) as { id: number };
    return { ...e, eventId: id };
  }

  listAfter(afterId: number, limit: number): FleetEvent[] {
    return (this.stmts.after.all(afterId, limit) as EventRow[]).map(fleetEventOf);
  }

  lastId(): number {
    return (this.stmts.last.get() as { id: number }).id;
  }

  deleteBefore(occurredBeforeMs: number, limit: number): number {
    return this.stmts.deleteBefore.run(occurredBeforeMs, limit).changes;
  }
}
