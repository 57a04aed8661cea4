// Starting + Running sessions per project (the spec's liveUser), polled by many clients. Each
// project's count is read from the table once, then kept by the lifecycle's every status change,
// so the hot path (userStats, the scheduler's concurrency limit) reads no SQL.
import { isLive, type SessionStatus } from './session-status';

export class LiveCounts {
  private readonly byProject = new Map<string, number>();

  constructor(private readonly countLive: (projectId: string) => number) {}

  live(projectId: string): number {
    let live = this.byProject.get(projectId);
    if (live === undefined) this.byProject.set(projectId, (live = this.countLive(projectId)));
    return live;
  }

  /** A session of the project moved from → to. A project never counted stays uncounted until asked. */
  moved(projectId: string, from: SessionStatus, to: SessionStatus): void {
    const live = this.byProject.get(projectId);
    if (live !== undefined) this.byProject.set(projectId, live + Number(isLive(to)) - Number(isLive(from)));
  }
}
