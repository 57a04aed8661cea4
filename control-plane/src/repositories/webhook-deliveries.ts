// Webhook delivery attempts and their outcomes (one row per attempt; there are no retries).
import type { Db } from '../db/database';
import type { WebhookDeliveryFailure } from '../errors';
import type { Sync } from '../store/promised';

export interface WebhookDelivery {
  projectId: string;
  event: string;
  uploadId: string | undefined;
  url: string;
  /** The receiver's HTTP status, when it answered. */
  statusCode: number | undefined;
  /** Why the delivery failed, as a kind the catalogue words for customers (rows from before migration 18 have none). */
  failure: WebhookDeliveryFailure | undefined;
  /** Why the delivery failed in detail (timeout, refused address, network error), when it did: operators only, it can name internal addresses. */
  error: string | undefined;
  durationMs: number;
  attemptedAt: number;
}

export interface WebhookDeliveriesRepository {
  insert(d: WebhookDelivery): Promise<void>;
  /** Newest first. */
  listByProject(projectId: string, limit: number): Promise<WebhookDelivery[]>;
}

export interface DeliveryRow {
  project_id: string;
  event: string;
  upload_id: string | null;
  url: string;
  status_code: number | null;
  failure: WebhookDeliveryFailure | null;
  error: string | null;
  duration_ms: number;
  attempted_at: number;
}

export class SqliteWebhookDeliveriesRepository implements Sync<WebhookDeliveriesRepository> {
  private readonly stmts;

  constructor(db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO webhook_deliveries (project_id, event, upload_id, url, status_code, failure, error, duration_ms, attempted_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      byProject: db.prepare(
        `SELECT project_id, event, upload_id, url, status_code, failure, error, duration_ms, attempted_at
         FROM webhook_deliveries WHERE project_id = ? ORDER BY id DESC LIMIT ?`,
      ),
    };
  }

  insert(d: WebhookDelivery): void {
    this.stmts.insert.run(d.projectId, d.event, d.uploadId ?? null, d.url, d.statusCode ?? null, d.failure ?? null, d.error ?? null, d.durationMs, d.attemptedAt);
  }

  listByProject(projectId: string, limit: number): WebhookDelivery[] {
    return (this.stmts.byProject.all(projectId, limit) as DeliveryRow[]).map((r) => ({
      projectId: r.project_id,
      event: r.event,
      uploadId: r.upload_id ?? undefined,
      url: r.url,
      statusCode: r.status_code ?? undefined,
      failure: r.failure ?? undefined,
      error: r.error ?? undefined,
      durationMs: r.duration_ms,
      attemptedAt: r.attempted_at,
    }));
  }
}
