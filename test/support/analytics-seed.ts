// Analytics history written straight into a control plane's database: sessions with status
// snapshots at chosen times, telemetry rows, and engine log files (gzip bytes in the real blob
// store), for the analytics API's route tests.
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import type { ControlPlaneWithDb } from '@pixelfleet/control-plane/test-support';

let counter = 0;

type Status = 'Enqueued' | 'Starting' | 'Running' | 'Terminated';

export interface SeededSession {
  projectId: string;
  /** Each recorded status and when (ms); the first is the session's creation, the last its status now. */
  statuses: [Status, number][];
  workerId?: string;
  endReason?: string;
}

/** Inserts a session and one snapshot row per status, oldest first; returns its id. */
export function seedSessionHistory(cp: ControlPlaneWithDb, s: SeededSession): string {
  counter += 1;
  const first = s.statuses[0];
  const last = s.statuses[s.statuses.length - 1];
  if (!first || !last) throw new Error('a seeded session needs a status');
  const sessionId = `session_${first[1]}_${100_000_000 + counter}`;
  cp.db
    .prepare(
      `INSERT INTO sessions (id, project_id, region, status, assigned_worker, end_reason, created_at, updated_at)
       VALUES (?, ?, 'europe', ?, ?, ?, ?, ?)`,
    )
    .run(sessionId, s.projectId, last[0], last[0] === 'Enqueued' ? null : (s.workerId ?? null), s.endReason ?? null, first[1], last[1]);
  const insert = cp.db.prepare('INSERT INTO session_snapshots (session_id, received_at, data) VALUES (?, ?, ?)');
  for (const [status, at] of s.statuses) {
    const data = { sessionId, projectId: s.projectId, status, region: 'Europe', ...(status === 'Enqueued' || s.workerId === undefined ? {} : { assignedWorker: s.workerId }) };
    insert.run(sessionId, at, JSON.stringify(data));
  }
  return sessionId;
}

/** Inserts telemetry rows of a session as the ingest route stores them (each row's own timestamp). */
export function seedTelemetry(cp: ControlPlaneWithDb, sessionId: string, projectId: string, rows: Record<string, unknown>[]): void {
  const insert = cp.db.prepare(
    'INSERT INTO telemetry_rows (session_id, project_id, log_type, event, timestamp, ts, received_at, row) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  );
  cp.db.transaction(() => {
    for (const row of rows) {
      const timestamp = row.timestamp as string;
      insert.run(
        sessionId,
        projectId,
        typeof row.logType === 'string' ? row.logType : null,
        typeof row.event === 'string' ? row.event : null,
        timestamp,
        Date.parse(timestamp),
        Date.parse(timestamp),
        JSON.stringify({ ...row, sessionId }),
      );
    }
  })();
}

/** Stores `text` gzipped in the blob store and records it as a log file of the session; returns its id. */
export async function seedLogFile(cp: ControlPlaneWithDb, f: { sessionId: string; projectId: string; fileName: string; text: string; uploadedAt: number }): Promise<string> {
  counter += 1;
  const gz = gzipSync(Buffer.from(f.text, 'utf8'));
  const blob = await cp.blobs.write(Readable.from([gz]), gz.byteLength);
  const logFileId = `log_${String(counter).padStart(24, '0')}`;
  cp.db
    .prepare(
      `INSERT INTO log_files (id, session_id, project_id, file_name, file_size, gz_size, blob_sha256, uploaded_at)
       VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
    )
    .run(logFileId, f.sessionId, f.projectId, f.fileName, Buffer.byteLength(f.text), blob.size, blob.sha256, f.uploadedAt);
  return logFileId;
}
