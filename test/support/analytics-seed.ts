// Analytics history written through a control plane's repositories: sessions with status
// snapshots at chosen times, telemetry rows, and engine log files (gzip bytes in the real blob
// store), for the analytics API's route tests.
import { Readable } from 'node:stream';
import { gzipSync } from 'node:zlib';
import type { ControlPlaneWithDb, SessionRecord, SnapshotData } from '@pixelfleet/control-plane/test-support';
import { repositoriesOf } from './seed';

let counter = 0;

type Status = 'Enqueued' | 'Starting' | 'Running' | 'Terminated';

export interface SeededSession {
  projectId: string;
  /** Each recorded status and when (ms); the first is the session's creation, the last its status now. */
  statuses: [Status, number][];
  workerId?: string;
  endReason?: string;
}

/**
 * Inserts a session and one snapshot row per status, oldest first (each received at its time);
 * returns its id. The session row ends in the last status, updated at its time.
 */
export function seedSessionHistory(cp: ControlPlaneWithDb, s: SeededSession): string {
  counter += 1;
  const first = s.statuses[0];
  if (!first) throw new Error('a seeded session needs a status');
  const sessionId = `session_${first[1]}_${100_000_000 + counter}`;
  const { sessions } = repositoriesOf(cp);
  // Placed when it entered Starting, as the scheduler records it.
  const placedAt = s.statuses.find(([status]) => status === 'Starting')?.[1];
  const stateAt = (status: Status, at: number): { session: SessionRecord; snapshot: SnapshotData } => {
    const assignedWorker = status === 'Enqueued' ? undefined : s.workerId;
    return {
      session: {
        sessionId,
        projectId: s.projectId,
        region: 'europe',
        status,
        assignedWorker,
        streamingId: undefined,
        playerId: undefined,
        maxRunTime: undefined,
        endReason: s.endReason,
        ...(placedAt === undefined || status === 'Enqueued' ? {} : { placedAt }),
        createdAt: first[1],
        updatedAt: at,
      },
      snapshot: { sessionId, projectId: s.projectId, status, region: 'Europe', ...(assignedWorker === undefined ? {} : { assignedWorker }) },
    };
  };
  cp.db.transaction(() => {
    const created = stateAt(...first);
    sessions.insert(created.session, created.snapshot);
    for (const [status, at] of s.statuses.slice(1)) {
      const next = stateAt(status, at);
      sessions.update(next.session, next.snapshot);
    }
  })();
  return sessionId;
}

/** Inserts telemetry rows of a session as the ingest route stores them (each received at its own timestamp). */
export function seedTelemetry(cp: ControlPlaneWithDb, sessionId: string, projectId: string, rows: Record<string, unknown>[]): void {
  repositoriesOf(cp).telemetry.insertMany(
    rows.map((row) => {
      const timestamp = row.timestamp as string;
      return {
        sessionId,
        projectId,
        logType: typeof row.logType === 'string' ? row.logType : undefined,
        event: typeof row.event === 'string' ? row.event : undefined,
        timestamp,
        receivedAt: Date.parse(timestamp),
        row: { ...row, sessionId },
      };
    }),
  );
}

/** Stores `text` gzipped in the blob store and records it as a log file of the session; returns its id. */
export async function seedLogFile(cp: ControlPlaneWithDb, f: { sessionId: string; projectId: string; fileName: string; text: string; uploadedAt: number }): Promise<string> {
  counter += 1;
  const gz = gzipSync(Buffer.from(f.text, 'utf8'));
  const blob = await cp.blobs.write(Readable.from([gz]), gz.byteLength);
  const logFileId = `log_${String(counter).padStart(24, '0')}`;
  repositoriesOf(cp).logFiles.insert({
    logFileId,
    sessionId: f.sessionId,
    projectId: f.projectId,
    fileName: f.fileName,
    fileSize: Buffer.byteLength(f.text),
    gzSize: blob.size,
    blobSha256: blob.sha256,
    uploadedAt: f.uploadedAt,
  });
  return logFileId;
}
