// Workers (streaming servers) and the commands queued for their agents.
import type { Db } from '../db/database';
import type { WorkerLink } from '../workers/worker-link';

export interface WorkerRecord {
  workerId: string;
  hostname: string;
  region: string;
  slots: number;
  agentVersion: string;
  link: WorkerLink;
  draining: boolean;
  connectionEpoch: number;
  lastAckedSeq: number;
  lastSeenAt: number | undefined;
  leaseExpiresAt: number | undefined;
  enrolledAt: number;
}

export type CommandPhase = 'PENDING' | 'ACCEPTED' | 'IN_PROGRESS' | 'SUCCEEDED' | 'FAILED';

export interface WorkerCommandRecord {
  workerId: string;
  seq: number;
  commandId: string;
  kind: string;
  /** The command as proto JSON (read back through decodeStoredCommand of @pixelfleet/proto; rows of the previous version hold the domain object as JSON). */
  payload: string;
  phase: CommandPhase;
  notAfter: number | undefined;
}

export interface WorkersRepository {
  insert(w: WorkerRecord, tokenHash: string): void;
  findById(workerId: string): WorkerRecord | undefined;
  findIdByTokenHash(tokenHash: string): string | undefined;
  list(): WorkerRecord[];
  /** Every worker with the number of sessions it holds (not Terminated), in one statement. */
  listWithUsedSlots(): (WorkerRecord & { usedSlots: number })[];
  /** Workers whose lease has run out but are not yet marked unreachable. */
  listLeaseExpired(nowMs: number): WorkerRecord[];
  /** Records a Hello: new epoch, link connected, lease renewed, identity refreshed. */
  recordHello(u: { workerId: string; epoch: number; slots: number; agentVersion: string; lastAckedSeq: number; nowMs: number; leaseExpiresAt: number }): void;
  /** Renews the lease; returns the worker's link state, or undefined for an unknown worker. */
  renewLease(workerId: string, nowMs: number, leaseExpiresAt: number): WorkerLink | undefined;
  setLink(workerId: string, link: WorkerLink): void;
  setDraining(workerId: string, draining: boolean): void;
  /** An operator's move: the region the worker serves from now on. */
  setRegion(workerId: string, region: string): void;
  /** An operator's removal: the row goes, and with it the token, the queued commands and the build copies (cascade). */
  remove(workerId: string): void;
  setLastAckedSeq(workerId: string, seq: number): void;
  /** Sessions on the worker that have not ended. */
  usedSlots(workerId: string): number;
  /** Stores a command under the worker's next seq and returns it. */
  enqueueCommand(c: { workerId: string; commandId: string; kind: string; payload: string; notAfter: number | undefined; nowMs: number }): WorkerCommandRecord;
  findCommand(commandId: string): WorkerCommandRecord | undefined;
  setCommandPhase(commandId: string, phase: CommandPhase, errorCode: string | undefined, errorMessage: string | undefined, nowMs: number): void;
  /** Commands not yet finished, in seq order (resent on every Hello). */
  unfinishedCommands(workerId: string): WorkerCommandRecord[];
  /**
   * Deletes at most limit commands that settled (SUCCEEDED or FAILED) before settledBeforeMs, oldest
   * first; returns how many (retention). A late ack of one is then ignored as unknown, as it would be anyway.
   */
  deleteSettledCommandsBefore(settledBeforeMs: number, limit: number): number;
}

interface WorkerRow {
  id: string;
  hostname: string;
  region: string;
  slots: number;
  agent_version: string;
  link: WorkerLink;
  draining: number;
  connection_epoch: number;
  last_acked_seq: number;
  last_seen_at: number | null;
  lease_expires_at: number | null;
  enrolled_at: number;
}

interface CommandRow {
  worker_id: string;
  seq: number;
  command_id: string;
  kind: string;
  payload: string;
  phase: CommandPhase;
  not_after: number | null;
}

const W_COLUMNS =
  'id, hostname, region, slots, agent_version, link, draining, connection_epoch, last_acked_seq, last_seen_at, lease_expires_at, enrolled_at';
const C_COLUMNS = 'worker_id, seq, command_id, kind, payload, phase, not_after';

const toWorker = (r: WorkerRow): WorkerRecord => ({
  workerId: r.id,
  hostname: r.hostname,
  region: r.region,
  slots: r.slots,
  agentVersion: r.agent_version,
  link: r.link,
  draining: r.draining === 1,
  connectionEpoch: r.connection_epoch,
  lastAckedSeq: r.last_acked_seq,
  lastSeenAt: r.last_seen_at ?? undefined,
  leaseExpiresAt: r.lease_expires_at ?? undefined,
  enrolledAt: r.enrolled_at,
});

const toCommand = (r: CommandRow): WorkerCommandRecord => ({
  workerId: r.worker_id,
  seq: r.seq,
  commandId: r.command_id,
  kind: r.kind,
  payload: r.payload,
  phase: r.phase,
  notAfter: r.not_after ?? undefined,
});

export class SqliteWorkersRepository implements WorkersRepository {
  private readonly stmts;

  constructor(private readonly db: Db) {
    this.stmts = {
      insert: db.prepare(
        `INSERT INTO workers (id, hostname, region, slots, token_hash, agent_version, link, draining, enrolled_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`,
      ),
      byId: db.prepare(`SELECT ${W_COLUMNS} FROM workers WHERE id = ?`),
      byToken: db.prepare('SELECT id FROM workers WHERE token_hash = ?'),
      list: db.prepare(`SELECT ${W_COLUMNS} FROM workers ORDER BY enrolled_at, id`),
      listUsed: db.prepare(
        `SELECT ${W_COLUMNS}, (SELECT COUNT(*) FROM sessions s WHERE s.assigned_worker = workers.id AND s.status <> 'Terminated') AS used_slots
         FROM workers ORDER BY enrolled_at, id`,
      ),
      leaseExpired: db.prepare(
        `SELECT ${W_COLUMNS} FROM workers WHERE link <> 'unreachable' AND lease_expires_at IS NOT NULL AND lease_expires_at <= ?`,
      ),
      hello: db.prepare(
        `UPDATE workers SET connection_epoch = @epoch, slots = @slots, agent_version = @agentVersion,
           last_acked_seq = MAX(last_acked_seq, @lastAckedSeq), link = 'connected', last_seen_at = @nowMs,
           lease_expires_at = @leaseExpiresAt WHERE id = @workerId`,
      ),
      renew: db.prepare('UPDATE workers SET last_seen_at = ?, lease_expires_at = ? WHERE id = ? RETURNING link'),
      setLink: db.prepare('UPDATE workers SET link = ? WHERE id = ?'),
      setDraining: db.prepare('UPDATE workers SET draining = ? WHERE id = ?'),
      setRegion: db.prepare('UPDATE workers SET region = ? WHERE id = ?'),
      remove: db.prepare('DELETE FROM workers WHERE id = ?'),
      setAcked: db.prepare('UPDATE workers SET last_acked_seq = MAX(last_acked_seq, ?) WHERE id = ?'),
      usedSlots: db.prepare(`SELECT COUNT(*) AS n FROM sessions WHERE assigned_worker = ? AND status <> 'Terminated'`),
      takeSeq: db.prepare('UPDATE workers SET next_seq = next_seq + 1 WHERE id = ? RETURNING next_seq - 1 AS seq'),
      insertCommand: db.prepare(
        `INSERT INTO worker_commands (worker_id, seq, command_id, kind, payload, phase, not_after, created_at, updated_at)
         VALUES (?, ?, ?, ?, ?, 'PENDING', ?, ?, ?)`,
      ),
      commandById: db.prepare(`SELECT ${C_COLUMNS} FROM worker_commands WHERE command_id = ?`),
      setPhase: db.prepare(
        'UPDATE worker_commands SET phase = ?, error_code = ?, error_message = ?, updated_at = ? WHERE command_id = ?',
      ),
      unfinished: db.prepare(
        `SELECT ${C_COLUMNS} FROM worker_commands WHERE worker_id = ? AND phase NOT IN ('SUCCEEDED', 'FAILED') ORDER BY seq`,
      ),
      // The phase test is spelled as the partial index worker_commands_settled's, so that index applies.
      deleteSettled: db.prepare(
        `DELETE FROM worker_commands WHERE rowid IN (SELECT rowid FROM worker_commands WHERE phase IN ('SUCCEEDED', 'FAILED') AND updated_at < ? ORDER BY updated_at LIMIT ?)`,
      ),
    };
  }

  insert(w: WorkerRecord, tokenHash: string): void {
    this.stmts.insert.run(w.workerId, w.hostname, w.region, w.slots, tokenHash, w.agentVersion, w.link, w.draining ? 1 : 0, w.enrolledAt);
  }

  findById(workerId: string): WorkerRecord | undefined {
    const r = this.stmts.byId.get(workerId) as WorkerRow | undefined;
    return r && toWorker(r);
  }

  findIdByTokenHash(tokenHash: string): string | undefined {
    return (this.stmts.byToken.get(tokenHash) as { id: string } | undefined)?.id;
  }

  list(): WorkerRecord[] {
    return (this.stmts.list.all() as WorkerRow[]).map(toWorker);
  }

  listWithUsedSlots(): (WorkerRecord & { usedSlots: number })[] {
    return (this.stmts.listUsed.all() as (WorkerRow & { used_slots: number })[]).map((r) => ({ ...toWorker(r), usedSlots: r.used_slots }));
  }

  listLeaseExpired(nowMs: number): WorkerRecord[] {
    return (this.stmts.leaseExpired.all(nowMs) as WorkerRow[]).map(toWorker);
  }

  recordHello(u: Parameters<WorkersRepository['recordHello']>[0]): void {
    this.stmts.hello.run(u);
  }

  renewLease(workerId: string, nowMs: number, leaseExpiresAt: number): WorkerLink | undefined {
    return (this.stmts.renew.get(nowMs, leaseExpiresAt, workerId) as { link: WorkerLink } | undefined)?.link;
  }

  setRegion(workerId: string, region: string): void {
    this.stmts.setRegion.run(region, workerId);
  }

  remove(workerId: string): void {
    this.stmts.remove.run(workerId);
  }

  setLink(workerId: string, link: WorkerLink): void {
    this.stmts.setLink.run(link, workerId);
  }

  setDraining(workerId: string, draining: boolean): void {
    this.stmts.setDraining.run(draining ? 1 : 0, workerId);
  }

  setLastAckedSeq(workerId: string, seq: number): void {
    this.stmts.setAcked.run(seq, workerId);
  }

  usedSlots(workerId: string): number {
    return (this.stmts.usedSlots.get(workerId) as { n: number }).n;
  }

  enqueueCommand(c: Parameters<WorkersRepository['enqueueCommand']>[0]): WorkerCommandRecord {
    return this.db.transaction(() => {
      const taken = this.stmts.takeSeq.get(c.workerId) as { seq: number } | undefined;
      if (taken === undefined) throw new Error(`cannot queue a command for unknown worker ${c.workerId}`);
      const { seq } = taken;
      this.stmts.insertCommand.run(c.workerId, seq, c.commandId, c.kind, c.payload, c.notAfter ?? null, c.nowMs, c.nowMs);
      return { workerId: c.workerId, seq, commandId: c.commandId, kind: c.kind, payload: c.payload, phase: 'PENDING' as const, notAfter: c.notAfter };
    })();
  }

  findCommand(commandId: string): WorkerCommandRecord | undefined {
    const r = this.stmts.commandById.get(commandId) as CommandRow | undefined;
    return r && toCommand(r);
  }

  setCommandPhase(commandId: string, phase: CommandPhase, errorCode: string | undefined, errorMessage: string | undefined, nowMs: number): void {
    this.stmts.setPhase.run(phase, errorCode ?? null, errorMessage ?? null, nowMs, commandId);
  }

  unfinishedCommands(workerId: string): WorkerCommandRecord[] {
    return (this.stmts.unfinished.all(workerId) as CommandRow[]).map(toCommand);
  }

  deleteSettledCommandsBefore(settledBeforeMs: number, limit: number): number {
    return this.stmts.deleteSettled.run(settledBeforeMs, limit).changes;
  }
}
