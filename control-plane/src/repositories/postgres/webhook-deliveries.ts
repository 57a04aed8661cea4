// Webhook delivery attempts and their outcomes in PostgreSQL (one row per attempt; there are no
// retries); the SQLite twin is ../webhook-deliveries.ts.
import type { PostgresPool } from '../../db/postgres-database';
import type { DeliveryRow, WebhookDeliveriesRepository, WebhookDelivery } from '../webhook-deliveries';
import { rowsOf } from './postgres-sql';

/** The row as a delivery (SQLite's twin maps its rows the same way, inline). */
const deliveryOf = (r: DeliveryRow): WebhookDelivery => ({
  projectId: r.project_id,
  event: r.event,
  uploadId: r.upload_id ?? undefined,
  url: r.url,
  statusCode: r.status_code ?? undefined,
  failure: r.failure ?? undefined,
  error: r.error ?? undefined,
  durationMs: r.duration_ms,
  attemptedAt: r.attempted_at,
});

export class PostgresWebhookDeliveriesRepository implements WebhookDeliveriesRepository {
  constructor(private readonly pool: PostgresPool) {}

  async insert(d: WebhookDelivery): Promise<void> {
    await this.pool.query(
      `INSERT INTO webhook_deliveries (project_id, event, upload_id, url, status_code, failure, error, duration_ms, attempted_at)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
      [d.projectId, d.event, d.uploadId ?? null, d.url, d.statusCode ?? null, d.failure ?? null, d.error ?? null, d.durationMs, d.attemptedAt],
    );
  }

  async listByProject(projectId: string, limit: number): Promise<WebhookDelivery[]> {
    // Newest first by insertion (the identity), not by attempted_at, as SQLite orders by its rowid.
    const rows = await rowsOf<DeliveryRow>(
      this.pool,
      `SELECT project_id, event, upload_id, url, status_code, failure, error, duration_ms, attempted_at
       FROM webhook_deliveries WHERE project_id = $1 ORDER BY id DESC LIMIT $2`,
      [projectId, limit],
    );
    return rows.map(deliveryOf);
  }
}
