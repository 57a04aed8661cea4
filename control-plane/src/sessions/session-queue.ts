// The waiting line of each project: FIFO of Enqueued session ids. In memory — a waiting
// viewer's WebSocket lives in this process too, so the line cannot outlive a restart.

export class SessionQueues {
  private readonly lines = new Map<string, string[]>();

  /** Appends the session; returns its 1-based position. */
  enqueue(projectId: string, sessionId: string): number {
    const line = this.lines.get(projectId) ?? [];
    if (!line.includes(sessionId)) line.push(sessionId);
    this.lines.set(projectId, line);
    return line.indexOf(sessionId) + 1;
  }

  /** Removes the session wherever it is; returns true if it was waiting. */
  remove(projectId: string, sessionId: string): boolean {
    const line = this.lines.get(projectId);
    const index = line?.indexOf(sessionId) ?? -1;
    if (!line || index < 0) return false;
    line.splice(index, 1);
    if (line.length === 0) this.lines.delete(projectId);
    return true;
  }

  head(projectId: string): string | undefined {
    return this.lines.get(projectId)?.[0];
  }

  /** 1-based position, or undefined when not waiting. */
  position(projectId: string, sessionId: string): number | undefined {
    const index = this.lines.get(projectId)?.indexOf(sessionId) ?? -1;
    return index < 0 ? undefined : index + 1;
  }

  length(projectId: string): number {
    return this.lines.get(projectId)?.length ?? 0;
  }

  /** Every waiting session of the project, in order. */
  waiting(projectId: string): readonly string[] {
    return this.lines.get(projectId) ?? [];
  }

  /** Projects that have someone waiting, in no particular order. */
  projectsWaiting(): string[] {
    return [...this.lines.keys()];
  }
}
