// The control plane's store: every repository the domain code reads and writes, over one database,
// with the database's own lifecycle (readiness, backups, close). The composition root opens one
// (sqlite-store.ts today; PostgreSQL is issue 27's scale-out path) and hands its repositories to
// the wings by their interfaces, so no service knows which database holds its rows.
import type { SchemaStatus } from '../db/database';
import type { BackupFile } from '../db/online-backup';
import type { AccessFactsRepository } from '../repositories/access-facts';
import type { BuildCopiesRepository } from '../repositories/build-copies';
import type { BuildsRepository } from '../repositories/builds';
import type { EventsRepository } from '../repositories/events';
import type { LogFilesRepository } from '../repositories/log-files';
import type { LogRetentionRepository } from '../repositories/log-retention';
import type { MailOutboxRepository } from '../repositories/mail-outbox';
import type { PeopleRetentionRepository } from '../repositories/people-retention';
import type { ProjectsRepository } from '../repositories/projects';
import type { SessionDailyRepository } from '../repositories/session-daily';
import type { SessionDiagnosisRepository } from '../repositories/session-diagnosis-store';
import type { SessionDimensionsRepository } from '../repositories/session-dimensions';
import type { SessionHistoryRepository } from '../repositories/session-history';
import type { SessionRetentionRepository } from '../repositories/session-retention';
import type { SessionsRepository } from '../repositories/sessions';
import type { SignInsRepository } from '../repositories/sign-ins';
import type { TelemetryRepository } from '../repositories/telemetry';
import type { UsersRepository } from '../repositories/users';
import type { WarmPoolFailuresRepository } from '../repositories/warm-pool-failures';
import type { WebhookDeliveriesRepository } from '../repositories/webhook-deliveries';
import type { WorkersRepository } from '../repositories/workers';

/** Which database a store keeps its rows in (/readyz and the start line say it). */
export type StoreKind = 'sqlite' | 'postgres';

/** Every repository of the control plane, one instance each, over one database. */
export interface Repositories {
  readonly users: UsersRepository;
  readonly signIns: SignInsRepository;
  readonly accessFacts: AccessFactsRepository;
  readonly projects: ProjectsRepository;
  readonly builds: BuildsRepository;
  readonly buildCopies: BuildCopiesRepository;
  readonly webhookDeliveries: WebhookDeliveriesRepository;
  readonly workers: WorkersRepository;
  readonly sessions: SessionsRepository;
  readonly sessionHistory: SessionHistoryRepository;
  readonly sessionDimensions: SessionDimensionsRepository;
  readonly sessionDaily: SessionDailyRepository;
  readonly diagnoses: SessionDiagnosisRepository;
  readonly warmFailures: WarmPoolFailuresRepository;
  readonly telemetry: TelemetryRepository;
  readonly logFiles: LogFilesRepository;
  readonly events: EventsRepository;
  readonly mailOutbox: MailOutboxRepository;
  readonly sessionRetention: SessionRetentionRepository;
  readonly logRetention: LogRetentionRepository;
  readonly peopleRetention: PeopleRetentionRepository;
}

export interface Store extends Repositories {
  readonly kind: StoreKind;
  /** The applied schema version and the one this build brings; rejects when the database does not answer. */
  schemaStatus(): Promise<SchemaStatus>;
  /** A consistent copy of the database for the admin Backup command. */
  takeBackup(): Promise<BackupFile>;
  /** Closes the database (after everything that writes to it has stopped); idempotent. */
  close(): Promise<void>;
}
