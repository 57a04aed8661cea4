// The app's start-up messages kept for later viewers: Unreal sends Protocol (255, twice) and
// InitialSettings (7) once, when its channel opens (pixel-streaming.md §4). Bounded: the last two
// 255s and the last 7, each at most maxMessageBytes.
import type { ChannelPayload } from './channel-outbox';

/** Pixel Streaming FromStreamer message ids that are replayed. */
export const PROTOCOL_MESSAGE_ID = 255;
export const INITIAL_SETTINGS_MESSAGE_ID = 7;

const KEEP: ReadonlyMap<number, number> = new Map([
  [PROTOCOL_MESSAGE_ID, 2],
  [INITIAL_SETTINGS_MESSAGE_ID, 1],
]);

export class StartupReplay {
  private entries: { id: number; payload: Buffer }[] = [];

  /** @param maxMessageBytes larger messages are not kept (default 64 KiB). */
  constructor(private readonly maxMessageBytes = 64 * 1024) {}

  /** Looks at one app→viewer message; keeps a copy if it is a start-up message. */
  record(payload: ChannelPayload): void {
    if (typeof payload === 'string' || payload.length === 0 || payload.length > this.maxMessageBytes) return;
    const id = payload[0] ?? -1;
    const keep = KEEP.get(id);
    if (keep === undefined) return;
    this.entries.push({ id, payload: Buffer.from(payload) });
    if (this.entries.filter((e) => e.id === id).length > keep) {
      this.entries.splice(this.entries.findIndex((e) => e.id === id), 1);
    }
  }

  /** The kept messages in the order the app sent them. */
  snapshot(): Buffer[] {
    return this.entries.map((e) => e.payload);
  }

  clear(): void {
    this.entries = [];
  }
}
