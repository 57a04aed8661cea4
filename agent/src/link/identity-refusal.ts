// The control plane's last refusal of this agent's stream because another agent process presents
// the same worker identity (a server cloned with worker.json), kept in <dataDir>/identity-refused.json
// from the refusal to the next accepted stream, so that `doctor` can say so on this host.
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { readJsonIfExists, writeJsonAtomic } from '../lib/atomic-file';

export interface IdentityRefusal {
  /** The worker whose identity was refused (a re-enrolled agent's old refusal does not count). */
  workerId: string;
  /** When, ms since the epoch. */
  atMs: number;
  /** The control plane's message, naming both hosts. */
  details: string;
}

export class IdentityRefusalStore {
  readonly path: string;

  constructor(dataDir: string) {
    this.path = join(dataDir, 'identity-refused.json');
  }

  /** The refusal on record, or undefined when there is none or the file is not one (it is advice, not state). */
  load(): IdentityRefusal | undefined {
    let raw: unknown;
    try {
      raw = readJsonIfExists(this.path);
    } catch {
      return undefined;
    }
    if (typeof raw !== 'object' || raw === null) return undefined;
    const { workerId, atMs, details } = raw as Partial<IdentityRefusal>;
    if (typeof workerId !== 'string' || typeof atMs !== 'number' || typeof details !== 'string') return undefined;
    return { workerId, atMs, details };
  }

  save(refusal: IdentityRefusal): void {
    writeJsonAtomic(this.path, refusal);
  }

  clear(): void {
    rmSync(this.path, { force: true });
  }
}
