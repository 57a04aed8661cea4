// Converts domain records to generated AdminService types (and access levels back).
import { adminV1 } from '@pixelfleet/proto';
import type { WorkerView } from '../workers/registry';
import type { SessionRecord } from '../repositories/sessions';
import type { BuildRecord } from '../repositories/builds';
import type { BuildProgress } from '../builds/build-pipeline';
import type { FleetEvent } from '../repositories/events';
import type { MemberAccess } from '../repositories/projects';
import type { WarmPoolView } from '../sessions/warm-pool';
import { invalid } from '../errors';

const date = (ms: number | undefined) => (ms === undefined ? undefined : new Date(ms));

export function workerToProto(w: WorkerView): adminV1.Worker {
  return {
    workerId: w.workerId,
    hostname: w.hostname,
    region: w.region,
    slots: w.slots,
    usedSlots: w.usedSlots,
    status: w.status,
    link: w.link,
    draining: w.draining,
    agentVersion: w.agentVersion,
    lastSeenAt: date(w.lastSeenAt),
    leaseExpiresAt: date(w.leaseExpiresAt),
    enrolledAt: date(w.enrolledAt),
  };
}

export function sessionToProto(s: SessionRecord): adminV1.Session {
  return {
    sessionId: s.sessionId,
    projectId: s.projectId,
    status: s.status,
    region: s.region,
    assignedWorker: s.assignedWorker ?? '',
    createdAt: date(s.createdAt),
    updatedAt: date(s.updatedAt),
    endReason: s.endReason ?? '',
    warmInstance: s.pooled === true,
    identifiedAt: date(s.identifiedAt),
  };
}

export function warmPoolToProto(p: WarmPoolView): adminV1.WarmPool {
  return {
    wanted: p.wanted,
    ready: p.ready,
    starting: p.starting,
    ending: p.ending,
    claims: p.claims,
    misses: p.misses,
    stoppedFailures: p.stopped?.failures ?? 0,
    stoppedReason: p.stopped?.reason ?? '',
  };
}

export function buildToProto(b: BuildRecord, progress?: BuildProgress): adminV1.Build {
  return {
    uploadId: b.uploadId,
    projectId: b.projectId,
    fileUrl: b.fileUrl ?? '',
    status: b.status,
    objection: b.objection ?? '',
    autoRelease: b.autoRelease,
    live: b.live,
    createdAt: date(b.createdAt),
    updatedAt: date(b.updatedAt),
    progress:
      progress === undefined
        ? undefined
        : {
            bytes: progress.bytes,
            totalBytes: progress.totalBytes ?? 0,
            bytesPerSecond: Math.round(progress.bytesPerSecond ?? 0),
            etaSeconds: Math.round(progress.etaSeconds ?? 0),
          },
    archiveSha256: b.archive?.sha256 ?? '',
    archiveBytes: b.archive?.bytes ?? 0,
  };
}

export function eventToProto(e: FleetEvent): adminV1.Event {
  return {
    eventId: e.eventId,
    type: e.type,
    occurredAt: date(e.occurredAt),
    workerId: e.workerId ?? '',
    sessionId: e.sessionId ?? '',
    projectId: e.projectId ?? '',
    dataJson: JSON.stringify(e.data),
  };
}

export function accessFromProto(a: adminV1.MemberAccess): MemberAccess {
  switch (a) {
    case adminV1.MemberAccess.MEMBER_ACCESS_FULL:
      return 'FULL';
    case adminV1.MemberAccess.MEMBER_ACCESS_READONLY:
      return 'READONLY';
    default:
      throw invalid('access must be FULL or READONLY');
  }
}
