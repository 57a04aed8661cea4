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
 * live events (they are stored first, so a later read finds them). It turns live only in the same
 * synchronous turn as a read that returned less than a page with the sink not full: record()
 * stores and emits in one turn on one thread, so every event recorded after that read reaches the
 * listener. Live, an event is written at once; one that fills the sink puts the watch back to
 * catching up (from the repository, once drained), so a slow client never makes it buffer.
 */
export class EventWatch {
  private cursor: number;
  private live = false;
  /** This watch's share of counters.held (given back when it stops). */
  private held = 0;
  private readonly abort = new AbortController();
  /** Set by start(). */
  private unsubscribe: (() => void) | undefined;

  /**
   * Delivers the events with an id above `after` (`events.lastId()`: only new ones), then live
   * ones. `onError` hears a failure reading the log, after the watch has stopped.
   */
  constructor(
    private readonly events: EventLog,
    private readonly sink: EventSink,
    after: number,
    private readonly counters: WatchCounters,
    private readonly onError: (err: unknown) => void,
  ) {
    this.cursor = after;
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
    if (!this.live || this.stopped || e.eventId <= this.cursor) return;
    if (this.deliver(e, false)) return;
    this.live = false;
    void this.catchUp(true);
  }

  /** `full`: the sink is full now (a live write filled it), so it first waits for room. */
  private async catchUp(full: boolean): Promise<void> {
    try {
      if (full) {
        this.counters.waits += 1;
        await this.sink.drained(this.abort.signal);
      }
      for (;;) {
        if (this.stopped) return;
        const page = this.events.after(this.cursor, WATCH_PAGE_SIZE);
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
        // Live only straight after a short read, in the same turn: nothing recorded can fall between.
        if (page.length < WATCH_PAGE_SIZE && !waited) {
          this.live = true;
          return;
        }
      }
    } catch (err) {
      if (this.stopped) return;
      this.stop();
      this.onError(err);
    }
  }
}
