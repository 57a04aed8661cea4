// The worker identity the agent received from Enroll, kept in <dataDir>/worker.json (0600). On
// Windows the mode is not an access rule: the file takes dataDir's, which `service install` sets
// to the service account and Administrators (service-plan.ts).
import { join } from 'node:path';
import { readJsonIfExists, writeJsonAtomic } from './lib/atomic-file';

export interface WorkerCredentials {
  workerId: string;
  workerToken: string;
  /** The control plane that issued them; a different one means enrolling again. */
  controlPlane: string;
}

export class CredentialStore {
  private readonly path: string;

  constructor(dataDir: string) {
    this.path = join(dataDir, 'worker.json');
  }

  load(): WorkerCredentials | undefined {
    const raw = readJsonIfExists(this.path) as Partial<WorkerCredentials> | undefined;
    if (raw === undefined) return undefined;
    if (typeof raw.workerId !== 'string' || typeof raw.workerToken !== 'string' || typeof raw.controlPlane !== 'string') {
      throw new Error(`${this.path} is damaged; remove it to enroll again`);
    }
    return { workerId: raw.workerId, workerToken: raw.workerToken, controlPlane: raw.controlPlane };
  }

  save(credentials: WorkerCredentials): void {
    writeJsonAtomic(this.path, credentials);
  }
}
