// Test-only handles on the control plane, for tests and benches (`@pixelfleet/control-plane/test-support`):
// the app with its raw database and the repositories over it (tests seed rows and read them back
// through these, test/support/seed.ts), the limits tests push against, and the words of every CLI
// command (the help test walks them). Not in the door: nothing that runs the service needs them.
export { buildControlPlaneWithDb, type ControlPlaneWithDb } from './app';
export type { Db } from './db/database';
export { MAX_ICE_CANDIDATES_PER_SESSION } from './share/viewer-gateway';
export { SqliteSessionDimensionsRepository, type ClientDimensions } from './repositories/session-dimensions';
export { SqliteSessionDailyRepository } from './repositories/session-daily';
export { SqliteTelemetryRepository } from './repositories/telemetry';
export { SqliteProjectsRepository } from './repositories/projects';
export type { ProjectSettings } from './projects/project-settings';
export { SqliteBuildsRepository, type BuildRecord } from './repositories/builds';
export type { BuildStatus } from './builds/build-stages';
export { SqliteBuildCopiesRepository, type BuildCopy } from './repositories/build-copies';
export { SqliteSessionsRepository, type SessionRecord, type SnapshotData } from './repositories/sessions';
export { SqliteSessionHistoryRepository } from './repositories/session-history';
export type { StoredTelemetryRow } from './repositories/telemetry';
export { SqliteEventsRepository, type FleetEvent, type NewFleetEvent } from './repositories/events';
export { SqliteWorkersRepository, type CommandPhase, type WorkerCommandRecord } from './repositories/workers';
export { SqliteLogFilesRepository, type LogFileRecord } from './repositories/log-files';
export { SqliteWebhookDeliveriesRepository, type WebhookDelivery } from './repositories/webhook-deliveries';
export { controlPlaneCommandWords } from './main';
export { ADMIN_COMMANDS } from './admin-cli/admin-commands';
export { CREDENTIAL_FAILURE_BURST } from './grpc/credential-failures';
export { maskFileUrl } from './http/api/build-routes';
export { CONTROL_PLANE_ENV_LEAVES } from './config';
export { openDatabase } from './db/database';
export { MailDelivery, MAIL_MAX_ATTEMPTS, type MailTransport } from './mail/mail-delivery';
export { smtpTransport } from './mail/smtp-transport';
export { outboxFolderTransport } from './mail/outbox-folder-transport';
export { SqliteMailOutboxRepository } from './repositories/mail-outbox';
export { LocalBlobStore, BlobTooLargeError, type BlobStore, type ByteRange } from './blobs/blob-store';
export { S3BlobStore, createS3Client } from './blobs/s3-blob-store';
export { partBytesFor } from './blobs/s3-multipart-upload';
export { MIGRATIONS } from './db/migrations';
export { SchemaTooNewError } from './db/database';
export { POSTGRES_MIGRATIONS } from './db/postgres-migrations';
export { PostgresConnectError, migratePostgres, openPostgres, postgresSchemaStatus, type PostgresPool } from './db/postgres-database';
export { sqliteRepositories } from './store/sqlite-store';
export { postgresRepositories, type PostgresRepositories } from './store/postgres-store';
export type { Repositories } from './store/store';
