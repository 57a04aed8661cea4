// One follower of the fleet event log behind a slow consumer (an admin WatchEvents stream): stored
// events are read a page at a time and written only while the consumer keeps up, then live events
// follow. However long the history or slow the client, a watch holds at most a page of events beyond
// what the sink buffers (its high-water mark).
import type { FleetEvent } from '../repositories/events';
import type { EventLog } from './event-log';

/** Events read from the repository at a time while a watch catches up. */
export const WATCH_PAGE_SIZE = 256;

/** Where a watch writes: `write` answers false when the consumer is full, `drained` waits until it has room. */
export interface EventSink {
  /** Hands one event to the transport; `sent` runs once it has left this process's buffers. */
  write(event: FleetEvent, sent: () => void): boolean;
  /** Resolves when a full sink has room again; rejects when the signal aborts. */
  drained(signal: AbortSignal): Promise<void>;
}

/** What the watches hold, summed (read by tests through the test-support handle, adminWatches). */
export class WatchCounters {
  open = 0;
  /** Events read or received for watchers and not yet sent (see EventSink.write). */
  held = 0;
  /** The most `held` has been since start. */
  peakHeld = 0;
  /** How many times a watch waited for its consumer to drain. */
  waits = 0;

  hold(n: number): void {
    this.held += n;
    if (this.held > this.peakHeld) this.peakHeld = this.held;
  }
}

/**
 * The ordering rule: a watch delivers events in strictly increasing event id, each at most once,
 * and every event after its starting point that is still stored when the watch reaches it.
 *
 * It is in one of two modes. Catching up, it reads the events after its cursor from the
 * repository, a page at a time, waiting for the sink to drain whenever it is full, and ignores
 * live events (they are stored first, so a later read finds them) except those heard while a read
 * is in flight: the read may or may not have seen them. After a read that returned less than a
 * page with the sink not full, it writes those (above its cursor) and turns live in the same turn:
 * every event stored after that read's start is either in it, among those heard, or heard live.
 * Live, an event is written at once; one that fills the sink puts the watch back to catching up
 * (from the repository, once drained), so a slow client never makes it buffer.
 */
export class EventWatch {
  private cursor: number;
  /** The cursor is read from the log (its newest id) before the first page. */
  private startsAtLatest: boolean;
  private live = false;
  /** Live events heard while a page read is in flight (undefined when no read is). */
  private heardDuringRead: FleetEvent[] | undefined;
  /** This watch's share of counters.held (given back when it stops). */
  private held = 0;
  private readonly abort = new AbortController();
  /** Set by start(). */
  private unsubscribe: (() => void) | undefined;

  /**
   * Delivers the events with an id above `after` ('latest': above the newest stored when the watch
   * starts, so only new ones), then live ones. `onError` hears a failure reading the log, after
   * the watch has stopped.
   */
  constructor(
    private readonly events: EventLog,
    private readonly sink: EventSink,
    after: number | 'latest',
    private readonly counters: WatchCounters,
    private readonly onError: (err: unknown) => void,
  ) {
    this.startsAtLatest = after === 'latest';
    this.cursor = after === 'latest' ? 0 : after;
  }

  /** Subscribes and starts the replay (a failure reading the log is reported through onError, later). */
  start(): void {
    if (this.unsubscribe !== undefined || this.stopped) return;
    this.counters.open += 1;
    this.unsubscribe = this.events.follow(0, (e) => this.onLive(e));
    queueMicrotask(() => void this.catchUp(false));
  }

  /** Stops reading and writing; idempotent. Events handed to the sink may still be sent. */
  stop(): void {
    if (this.stopped) return;
    this.abort.abort();
    if (this.unsubscribe === undefined) return;
    this.unsubscribe();
    this.counters.open -= 1;
    this.counters.held -= this.held;
    this.held = 0;
  }

  private get stopped(): boolean {
    return this.abort.signal.aborted;
  }

  /** Writes one event; false when the sink is now full. */
  private deliver(e: FleetEvent, alreadyHeld: boolean): boolean {
    if (!alreadyHeld) this.hold(1);
    this.cursor = e.eventId;
    return this.sink.write(e, () => {
      if (!this.stopped) this.hold(-1);
    });
  }

  private hold(n: number): void {
    this.held += n;
    this.counters.hold(n);
  }

  private onLive(e: FleetEvent): void {
    if (this.stopped || e.eventId <= this.cursor) return;
    if (!this.live) {
      this.heardDuringRead?.push(e);
      return;
    }
    if (this.deliver(e, false)) return;
    this.live = false;
    void this.catchUp(true);
  }

  /** Writes the heard events above the cursor, in id order; false when one filled the sink (the rest are read again). */
  private writeHeard(heard: readonly FleetEvent[]): boolean {
    for (const e of [...heard].sort((a, b) => a.eventId - b.eventId)) {
      if (e.eventId <= this.cursor) continue;
      if (!this.deliver(e, false)) return false;
    }
    return true;
  }

  /** `full`: the sink is full now (a live write filled it), so it first waits for room. */
  private async catchUp(full: boolean): Promise<void> {
    try {
      if (this.startsAtLatest) {
        // Anything stored after this read is above it, and the first page finds it.
        this.cursor = await this.events.lastId();
        this.startsAtLatest = false;
      }
      if (full) {
        this.counters.waits += 1;
        await this.sink.drained(this.abort.signal);
      }
      for (;;) {
        if (this.stopped) return;
        const heard: FleetEvent[] = [];
        this.heardDuringRead = heard;
        let page: FleetEvent[];
        try {
          page = await this.events.after(this.cursor, WATCH_PAGE_SIZE);
        } finally {
          this.heardDuringRead = undefined;
        }
        this.hold(page.length);
        let waited = false;
        for (const e of page) {
          if (this.stopped) return;
          if (this.deliver(e, true)) continue;
          // Full: the rest of this page (at most a page) waits here until the consumer has room.
          this.counters.waits += 1;
          await this.sink.drained(this.abort.signal);
          waited = true;
        }
        // Live only straight after a short read, in the same turn, once what was heard during the
        // read is written: nothing recorded can fall between. A heard event that fills the sink
        // sends the watch back to the repository, once drained.
        if (page.length < WATCH_PAGE_SIZE && !waited) {
          if (this.writeHeard(heard)) {
            this.live = true;
            return;
          }
          this.counters.waits += 1;
          await this.sink.drained(this.abort.signal);
        }
      }
    } catch (err) {
      if (this.stopped) return;
      this.stop();
      this.onError(err);
    }
  }
}
