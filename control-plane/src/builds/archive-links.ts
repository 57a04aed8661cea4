// Download links for build archives, handed to agents by the distribution: stateless signed
// tokens (HMAC-SHA256 over worker, build, archive digest and expiry) under a key kept in the data
// dir, so links issued before a restart still work until they expire. Redeeming one finds the archive:
// its bytes, or (object storage) a short-lived URL of the store's own to send the agent to.
import { createHmac, randomBytes } from 'node:crypto';
import { chmodSync, closeSync, openSync, readFileSync, statSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import type { Clock } from '@pixelfleet/common';
import type { BlobStore, ByteRange } from '../blobs/blob-store';
import { ApiError, type HttpErrorName } from '../errors';
import { secretsEqual } from '../lib/secrets';
import type { BuildsRepository } from '../repositories/builds';

/** The link key's file in the data dir: 32 random bytes, owner-only (0600). */
export const ARCHIVE_LINK_KEY_FILE = 'archive-link.key';
const KEY_BYTES = 32;

/** The download route (fastify syntax); `archivePath` fills it. The token rides in `?token=`. */
export const ARCHIVE_ROUTE = '/agent/builds/:uploadId/archive';
export const archivePath = (uploadId: string) => `/agent/builds/${encodeURIComponent(uploadId)}/archive`;

const TOKEN_VERSION = 'v1';
/** What a token's ids may hold: no `.` (the field separator) and nothing a URL must escape. */
const ID = /^[A-Za-z0-9_-]{1,128}$/;
const SHA256 = /^[0-9a-f]{64}$/;
const TOKEN = /^v1\.([A-Za-z0-9_-]{1,128})\.([A-Za-z0-9_-]{1,128})\.([0-9a-f]{64})\.(\d{1,16})\.([A-Za-z0-9_-]{43})$/;

/**
 * The control plane's link key: read from `<dataDir>/archive-link.key`, made once (32 random
 * bytes, mode 0600, created exclusively so two starts never write two keys) when absent. A key
 * file readable by others is narrowed to 0600. Deleting the file revokes every link issued.
 */
export function loadArchiveLinkKey(dataDir: string): Buffer {
  const path = join(dataDir, ARCHIVE_LINK_KEY_FILE);
  try {
    const fd = openSync(path, 'wx', 0o600);
    try {
      writeSync(fd, randomBytes(KEY_BYTES));
    } finally {
      closeSync(fd);
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  }
  if (process.platform !== 'win32' && (statSync(path).mode & 0o077) !== 0) chmodSync(path, 0o600);
  const key = readFileSync(path);
  if (key.length !== KEY_BYTES) throw new Error(`${path} must hold ${KEY_BYTES} bytes (delete it to make a new key, which revokes every archive link)`);
  return key;
}

/** Why a token was refused: each is one catalog entry (403). */
export type ArchiveTokenRefusal = 'missing' | 'invalid' | 'expired' | 'otherBuild';

export const ARCHIVE_TOKEN_REFUSALS: Readonly<Record<ArchiveTokenRefusal, HttpErrorName>> = {
  missing: 'archiveLinkMissing',
  invalid: 'archiveLinkInvalid',
  expired: 'archiveLinkExpired',
  otherBuild: 'archiveLinkOtherBuild',
};

export type ArchiveTokenCheck = { ok: true; workerId: string; sha256: string; expiresAt: number } | { ok: false; refusal: ArchiveTokenRefusal };

/** A redeemed link: who downloads which archive, and its bytes. */
export interface OpenedArchive {
  workerId: string;
  uploadId: string;
  sha256: string;
  bytes: number;
  /** Streams the archive, or `range` of it (inclusive offsets), once the store has answered. */
  read(range?: ByteRange): Promise<Readable>;
  /** A short-lived URL the archive can be fetched from directly (`Range` included), or undefined when the control plane serves it (BlobStore.directUrl). */
  directUrl(): Promise<string | undefined>;
}

export interface ArchiveLinksOptions {
  key: Buffer;
  clock: Clock;
  /** How long a link stays valid, in seconds (config distribution.linkTtlSeconds). */
  linkTtlSeconds: number;
  /** The HTTP origin agents reach (publicUrls.agents); undefined until the HTTP server listens. */
  agentsUrl: () => string | undefined;
  builds: Pick<BuildsRepository, 'findById'>;
  blobs: Pick<BlobStore, 'has' | 'read' | 'directUrl'>;
}

export class ArchiveLinks {
  constructor(private readonly options: ArchiveLinksOptions) {}

  /**
   * A download URL for one worker and one build's archive, valid for linkTtlSeconds from now
   * (`expiresAt`, epoch ms). Throws before the HTTP server listens (no origin to point at yet).
   */
  issueArchiveLink(link: { workerId: string; uploadId: string; sha256: string }): { url: string; expiresAt: number } {
    const { workerId, uploadId, sha256 } = link;
    if (!ID.test(workerId) || !ID.test(uploadId)) throw new Error('archive link ids must be 1-128 characters of A-Z a-z 0-9 _ -');
    if (!SHA256.test(sha256)) throw new Error('not a sha256 digest');
    const origin = this.options.agentsUrl();
    if (origin === undefined) throw new Error('archive links need the HTTP server listening');
    const expiresAt = this.options.clock.now() + this.options.linkTtlSeconds * 1000;
    const token = [TOKEN_VERSION, workerId, uploadId, sha256, String(expiresAt), this.mac(workerId, uploadId, sha256, expiresAt)].join('.');
    return { url: `${origin}${archivePath(uploadId)}?token=${token}`, expiresAt };
  }

  /**
   * Checks a token presented for `uploadId`: its signature first (nothing about a forged token is
   * told apart), then that it names this build, then its expiry. The caller compares `sha256`
   * with the build's archive.
   */
  verifyArchiveToken(token: unknown, uploadId: string): ArchiveTokenCheck {
    if (token === undefined || token === '') return { ok: false, refusal: 'missing' };
    const m = typeof token === 'string' ? TOKEN.exec(token) : null;
    if (!m) return { ok: false, refusal: 'invalid' };
    const [, workerId = '', tokenUploadId = '', sha256 = '', expiry = '', mac = ''] = m;
    const expiresAt = Number(expiry);
    if (!secretsEqual(mac, this.mac(workerId, tokenUploadId, sha256, expiresAt))) return { ok: false, refusal: 'invalid' };
    if (tokenUploadId !== uploadId) return { ok: false, refusal: 'otherBuild' };
    if (this.options.clock.now() >= expiresAt) return { ok: false, refusal: 'expired' };
    return { ok: true, workerId, sha256, expiresAt };
  }

  /**
   * Redeems a token for `uploadId`'s archive. Throws ApiError: 403 for a refused token (checked
   * before the build is looked up, so a caller without a link learns nothing about builds),
   * 404 for an unknown build or one without an archive.
   */
  async openArchive(token: unknown, uploadId: string): Promise<OpenedArchive> {
    const check = this.verifyArchiveToken(token, uploadId);
    if (!check.ok) throw new ApiError(ARCHIVE_TOKEN_REFUSALS[check.refusal]);
    const build = await this.options.builds.findById(uploadId);
    if (!build) throw new ApiError('uploadNotFound');
    if (!build.archive) throw new ApiError('buildHasNoArchive');
    if (build.archive.sha256 !== check.sha256) throw new ApiError('archiveLinkOtherBuild');
    const { sha256, bytes } = build.archive;
    // A recorded archive whose blob is gone is the server's fault: a logged 500, not a 404.
    if (!(await this.options.blobs.has(sha256))) throw new Error(`archive blob ${sha256} of ${uploadId} is missing from the blob store`);
    const { blobs } = this.options;
    return { workerId: check.workerId, uploadId, sha256, bytes, read: (range) => blobs.read(sha256, range), directUrl: () => blobs.directUrl(sha256) };
  }

  private mac(workerId: string, uploadId: string, sha256: string, expiresAt: number): string {
    // Newline-separated fields under a version label: no field holds a newline (ID, SHA256).
    return createHmac('sha256', this.options.key).update(`pixelfleet archive link ${TOKEN_VERSION}\n${workerId}\n${uploadId}\n${sha256}\n${expiresAt}`).digest('base64url');
  }
}
