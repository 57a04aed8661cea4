// Holds UIInteraction messages from the host page until the app can take them: the frontend
// library's emitUIInteraction returns false until the video plays (pixel-streaming.md §5.2), so
// messages wait here, in order, and are retried until accepted.

import type { UiInteractionData } from '../embed-messages';

export interface UiInteractionQueueOptions {
  /** The library's emitUIInteraction: true when sent, false when the app cannot take it yet. */
  readonly send: (data: UiInteractionData) => boolean;
  /** Retry interval while messages wait, in ms; default 250. */
  readonly retryMs?: number;
  /** Most messages held; the oldest is dropped beyond it. Default 100. */
  readonly capacity?: number;
}

export class UiInteractionQueue {
  private readonly waiting: UiInteractionData[] = [];
  private timer: ReturnType<typeof setTimeout> | undefined;
  private closed = false;

  constructor(private readonly options: UiInteractionQueueOptions) {}

  get size(): number {
    return this.waiting.length;
  }

  /** Send now if possible (keeping order behind earlier messages), else hold and retry. */
  enqueue(data: UiInteractionData): void {
    if (this.closed) return;
    this.waiting.push(data);
    const capacity = this.options.capacity ?? 100;
    if (this.waiting.length > capacity) this.waiting.splice(0, this.waiting.length - capacity);
    this.drain();
  }

  /** Try to send everything waiting now (e.g. when the video starts playing). */
  drain(): void {
    if (this.closed) return;
    while (this.waiting.length > 0) {
      const next = this.waiting[0] as UiInteractionData;
      if (!this.options.send(next)) {
        this.schedule();
        return;
      }
      this.waiting.shift();
    }
    this.cancel();
  }

  /** Drop everything and stop retrying (the session ended). Idempotent. */
  close(): void {
    this.closed = true;
    this.waiting.length = 0;
    this.cancel();
  }

  private schedule(): void {
    if (this.timer !== undefined) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.drain();
    }, this.options.retryMs ?? 250);
  }

  private cancel(): void {
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }
}
