// Ordered, bounded sending on a data channel that may not be open yet: messages wait for
// readyState 'open' (werift-notes §5.8) and then go out in arrival order before anything newer.
// The channel may be attached later (the app's arrives after its offer) or swapped (a new ingest).
import type { RTCDataChannel } from 'werift';

/** A data-channel message exactly as received: binary as Buffer, text (rare in Pixel Streaming) as string. */
export type ChannelPayload = Buffer | string;

export interface OutboxLimits {
  /** Most messages held while the channel is not open (default 10 000). */
  maxMessages: number;
  /** Most bytes held while the channel is not open (default 8 MiB). */
  maxBytes: number;
}

export const DEFAULT_OUTBOX_LIMITS: OutboxLimits = { maxMessages: 10_000, maxBytes: 8 * 1024 * 1024 };

export interface OutboxHooks {
  /** One message handed to werift. */
  sent(payload: ChannelPayload): void;
  /** One message given up (queue full, werift refused it); reason is for the log. */
  dropped(reason: string): void;
}

export function payloadBytes(payload: ChannelPayload): number {
  return typeof payload === 'string' ? Buffer.byteLength(payload) : payload.length;
}

export class ChannelOutbox {
  private channel: RTCDataChannel | undefined;
  private unsubscribe: (() => void) | undefined;
  private queue: ChannelPayload[] = [];
  private queuedBytes = 0;
  private closed = false;

  constructor(
    private readonly limits: OutboxLimits,
    private readonly hooks: OutboxHooks,
    /** Messages to deliver first, once the channel opens (the start-up replay). */
    initial: readonly ChannelPayload[] = [],
  ) {
    for (const payload of initial) this.enqueue(payload);
  }

  get pending(): number {
    return this.queue.length;
  }

  /** Sends through `channel` from now on; flushes at once if it is already open. */
  attach(channel: RTCDataChannel): void {
    this.unsubscribe?.();
    this.channel = channel;
    const { unSubscribe } = channel.stateChanged.subscribe((state) => {
      if (state === 'open') this.flush();
    });
    this.unsubscribe = unSubscribe;
    this.flush();
  }

  /** Stops using the current channel; later messages queue until the next attach. */
  detach(): void {
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.channel = undefined;
  }

  send(payload: ChannelPayload): void {
    if (this.closed) return;
    if (this.queue.length === 0 && this.channel?.readyState === 'open') this.write(this.channel, payload);
    else this.enqueue(payload);
  }

  close(): void {
    this.closed = true;
    this.detach();
    this.queue = [];
    this.queuedBytes = 0;
  }

  private enqueue(payload: ChannelPayload): void {
    const bytes = payloadBytes(payload);
    if (this.queue.length >= this.limits.maxMessages || this.queuedBytes + bytes > this.limits.maxBytes) {
      this.hooks.dropped(`queue full (${this.queue.length} messages, ${this.queuedBytes} bytes) while the channel is not open`);
      return;
    }
    this.queue.push(payload);
    this.queuedBytes += bytes;
  }

  private flush(): void {
    const channel = this.channel;
    while (!this.closed && channel !== undefined && channel.readyState === 'open' && this.channel === channel) {
      const payload = this.queue.shift();
      if (payload === undefined) return;
      this.queuedBytes -= payloadBytes(payload);
      this.write(channel, payload);
    }
  }

  private write(channel: RTCDataChannel, payload: ChannelPayload): void {
    try {
      channel.send(payload);
      this.hooks.sent(payload);
    } catch (err) {
      this.hooks.dropped(err instanceof Error ? err.message : String(err));
    }
  }
}
