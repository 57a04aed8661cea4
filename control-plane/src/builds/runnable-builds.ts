// What the scheduler asks the distribution, synchronously, while it places sessions: may this
// worker run sessions of this build? Yes when it holds the build ready, or when the build needs no
// copy (a local build: no archive). The store answers with promises, so the answers are kept here.
// The distribution (the only writer of build copies) notes each copy as it records it, and each
// build and copy it reads, always inside its one-at-a-time work for that build, so what is noted
// is never older than what is already here. A pair not known yet is read from the store by the
// distribution; until then the answer is no.

/** A build as far as running it goes: has it an archive to copy? */
interface BuildFacts {
  archive?: unknown;
}

export class RunnableBuilds {
  /** Per build: true when it has an archive to copy; false for a build that needs none (local, or unknown). */
  private readonly archived = new Map<string, boolean>();
  /** Per `uploadId\nworkerId`: true when the worker's copy of the build is ready. */
  private readonly ready = new Map<string, boolean>();
  /** Workers whose Hello is being taken in (their copies are being recorded): they run nothing new meanwhile. */
  private readonly catchingUp = new Map<string, number>();

  /** True or false when known, undefined when the store must be asked. */
  answer(workerId: string, uploadId: string): boolean | undefined {
    const archived = this.archived.get(uploadId);
    if (archived === false) return true;
    if (this.catchingUp.has(workerId)) return false;
    return archived === undefined ? undefined : this.ready.get(pairKey(uploadId, workerId));
  }

  /** The build as read from the store (undefined: there is no such build, which needs no copy either). */
  noteBuild(uploadId: string, build: BuildFacts | undefined): void {
    // An archive, once recorded, stays: a build read without one may get one later (the pipeline).
    if (build?.archive !== undefined) this.archived.set(uploadId, true);
    else if (this.archived.get(uploadId) !== true) this.archived.set(uploadId, false);
  }

  /** The worker's copy of the build, as recorded (or read): ready or not (sent, failed, none). */
  noteCopy(uploadId: string, workerId: string, ready: boolean): void {
    this.archived.set(uploadId, true);
    this.ready.set(pairKey(uploadId, workerId), ready);
  }

  /**
   * The worker said Hello: what it holds is taken in again from its claims and the store, so what
   * was known of its copies is forgotten, and it runs no build with a copy until end() is called.
   */
  beginCatchUp(workerId: string): { end(): void } {
    for (const key of this.ready.keys()) if (key.endsWith(`\n${workerId}`)) this.ready.delete(key);
    this.catchingUp.set(workerId, (this.catchingUp.get(workerId) ?? 0) + 1);
    let ended = false;
    return {
      end: () => {
        if (ended) return;
        ended = true;
        const left = (this.catchingUp.get(workerId) ?? 1) - 1;
        if (left === 0) this.catchingUp.delete(workerId);
        else this.catchingUp.set(workerId, left);
      },
    };
  }
}

const pairKey = (uploadId: string, workerId: string) => `${uploadId}\n${workerId}`;
