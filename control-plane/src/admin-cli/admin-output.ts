// What the admin commands print: the JSON shape of each AdminService object (`--json`, with
// unset fields as null) and the human forms of a build's progress, a warm instance and an event.
import type { adminV1 } from '@pixelfleet/proto';

export const iso = (d: Date | undefined) => (d === undefined ? null : d.toISOString());

export const workerJson = (w: adminV1.Worker) => ({
  workerId: w.workerId,
  hostname: w.hostname,
  region: w.region,
  status: w.status,
  link: w.link,
  draining: w.draining,
  slots: w.slots,
  usedSlots: w.usedSlots,
  agentVersion: w.agentVersion,
  lastSeenAt: iso(w.lastSeenAt),
  leaseExpiresAt: iso(w.leaseExpiresAt),
  enrolledAt: iso(w.enrolledAt),
});

export const sessionJson = (s: adminV1.Session) => ({
  sessionId: s.sessionId,
  projectId: s.projectId,
  status: s.status,
  region: s.region,
  assignedWorker: s.assignedWorker === '' ? null : s.assignedWorker,
  createdAt: iso(s.createdAt),
  updatedAt: iso(s.updatedAt),
  endReason: s.endReason === '' ? null : s.endReason,
  warmInstance: s.warmInstance,
  identifiedAt: iso(s.identifiedAt),
});

/**
 * The WARM column of `admin sessions`: `-` for a viewer's session (one a warm instance served
 * included); for a warm instance no viewer has claimed, `ready` (its app identified: the next
 * viewer is served at once) or `starting` (its app loading), each holding its slot, and `unclaimed`
 * once it is ending or ended without a viewer.
 */
export function warmMark(s: adminV1.Session): string {
  if (!s.warmInstance) return '-';
  if (s.status === 'Terminating' || s.status === 'Terminated') return 'unclaimed';
  return s.identifiedAt === undefined ? 'starting' : 'ready';
}

export const buildJson = (b: adminV1.Build) => ({
  uploadId: b.uploadId,
  projectId: b.projectId,
  fileUrl: b.fileUrl === '' ? null : b.fileUrl,
  status: b.status,
  objection: b.objection === '' ? null : b.objection,
  autoRelease: b.autoRelease,
  live: b.live,
  createdAt: iso(b.createdAt),
  updatedAt: iso(b.updatedAt),
  progress:
    b.progress === undefined
      ? null
      : {
          bytes: b.progress.bytes,
          totalBytes: b.progress.totalBytes === 0 ? null : b.progress.totalBytes,
          bytesPerSecond: b.progress.bytesPerSecond === 0 ? null : b.progress.bytesPerSecond,
          etaSeconds: b.progress.etaSeconds === 0 ? null : b.progress.etaSeconds,
        },
  archiveSha256: b.archiveSha256 === '' ? null : b.archiveSha256,
  archiveBytes: b.archiveSha256 === '' ? null : b.archiveBytes,
});

const MIB = 1024 * 1024;

/** `412 / 2,048 MiB, 96.3 MiB/s, 17 s left` for a build the pipeline is working on; `-` otherwise. */
export function progressText(p: adminV1.BuildProgress | undefined): string {
  if (p === undefined) return '-';
  const mib = (n: number) => (n / MIB).toLocaleString('en-US', { maximumFractionDigits: 0 });
  const parts = [p.totalBytes > 0 ? `${mib(p.bytes)} / ${mib(p.totalBytes)} MiB` : `${mib(p.bytes)} MiB`];
  if (p.bytesPerSecond > 0) parts.push(`${(p.bytesPerSecond / MIB).toFixed(1)} MiB/s`);
  if (p.etaSeconds > 0) parts.push(`${p.etaSeconds} s left`);
  return parts.join(', ');
}

export const eventJson = (e: adminV1.Event) => ({
  eventId: e.eventId,
  type: e.type,
  occurredAt: iso(e.occurredAt),
  workerId: e.workerId === '' ? null : e.workerId,
  sessionId: e.sessionId === '' ? null : e.sessionId,
  projectId: e.projectId === '' ? null : e.projectId,
  data: JSON.parse(e.dataJson || '{}') as unknown,
});

/** An event as `admin events` prints it without --json: time, id, type, what it is about, its data. */
export function eventLine(e: adminV1.Event): string {
  const about = [e.workerId && `worker=${e.workerId}`, e.sessionId && `session=${e.sessionId}`, e.projectId && `project=${e.projectId}`].filter(Boolean).join(' ');
  return `${iso(e.occurredAt)}  #${e.eventId}  ${e.type}  ${about}  ${e.dataJson}\n`;
}
