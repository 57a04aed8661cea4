// A bounded FIFO of telemetry rows: when it is full the oldest rows go first, so a failing endpoint
// costs old statistics rather than memory.

export class RowBuffer<T> {
  private rows: T[] = [];
  private droppedCount = 0;

  /** @param capacity most rows held at once (older rows are dropped beyond it). */
  constructor(readonly capacity: number) {
    if (!Number.isSafeInteger(capacity) || capacity < 1) throw new RangeError('capacity must be a positive integer');
  }

  get size(): number {
    return this.rows.length;
  }

  /** Rows dropped so far because the buffer was full. */
  get dropped(): number {
    return this.droppedCount;
  }

  push(row: T): void {
    this.rows.push(row);
    this.trim();
  }

  /** Remove and return up to `max` of the oldest rows. */
  take(max: number): T[] {
    return this.rows.splice(0, Math.max(0, max));
  }

  /** Put rows that could not be delivered back at the front, still oldest first. */
  requeue(rows: readonly T[]): void {
    this.rows.unshift(...rows);
    this.trim();
  }

  clear(): void {
    this.rows = [];
  }

  private trim(): void {
    const excess = this.rows.length - this.capacity;
    if (excess > 0) {
      this.rows.splice(0, excess);
      this.droppedCount += excess;
    }
  }
}
