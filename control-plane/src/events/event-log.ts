// Records fleet events durably and fans them out to live watchers (admin WatchEvents).
import type { Logger } from 'pino';
import { Listeners, type Clock } from '@pixelfleet/common';
import type { EventsRepository, FleetEvent } from '../repositories/events';

export type EventListener = (event: FleetEvent) => void;

/**
 * What record() answers: the stored event, or undefined when it could not be stored (logged). It
 * never rejects, so a caller that does not need the event may leave it unawaited (eslint's
 * no-floating-promises knows this type as safe); a caller that must come after the row awaits it.
 */
export interface RecordedEvent extends Promise<FleetEvent | undefined> {
  readonly __recordedEvent?: never;
}

/** Stored events read at a time while follow() replays. */
const REPLAY_PAGE = 500;

export class EventLog {
  /** A throwing watcher is logged and skipped: the event is already recorded, and the others still hear it. */
  private readonly listeners: Listeners<{ recorded: [event: FleetEvent] }>;

  constructor(
    private readonly repo: EventsRepository,
    private readonly clock: Clock,
    private readonly log: Logger,
  ) {
    this.listeners = new Listeners((_event, err) => log.error({ err }, 'fleet event watcher threw'));
  }

  /**
   * Stores the event (at the clock's time now, in call order: the repository gives one process's
   * appends increasing ids) and then tells the live watchers. A store that fails is logged, not
   * thrown: the event log records what happened, and its failure must not undo or break the
   * operation it describes.
   */
  record(type: string, about: { workerId?: string; sessionId?: string; projectId?: string }, data: Record<string, unknown> = {}): RecordedEvent {
    const stored = this.repo.append({
      type,
      occurredAt: this.clock.now(),
      workerId: about.workerId,
      sessionId: about.sessionId,
      projectId: about.projectId,
      data,
    });
    return stored.then(
      (event) => {
        this.listeners.emit('recorded', event);
        return event;
      },
      (err: unknown) => {
        this.log.error({ err, type, ...about }, 'fleet event could not be recorded');
        return undefined;
      },
    );
  }

  /** Stored events with an id above afterId, oldest first, at most limit (a watch's page). */
  after(afterId: number, limit: number): Promise<FleetEvent[]> {
    return this.repo.listAfter(afterId, limit);
  }

  /** The newest event's id (0 when none was ever recorded). */
  lastId(): Promise<number> {
    return this.repo.lastId();
  }

  /**
   * Live events from now on, each once, in id order; with afterId (a number above 0, or 'first' for
   * every stored event) the stored events after it first, read a page at a time. Returns the
   * unsubscribe function. The subscription starts before the replay's first read, and what it hears
   * meanwhile waits until the replay has caught up, so no event falls between the two and none
   * comes twice. For listeners in this process; a stream to a client uses EventWatch (paced by
   * the client). A failed read is logged and ends the replay; live events still follow.
   */
  follow(afterId: number | 'first', listener: EventListener): () => void {
    let replaying = afterId === 'first' || afterId > 0;
    let cursor = afterId === 'first' ? 0 : afterId;
    let stopped = false;
    const heardMeanwhile: FleetEvent[] = [];
    const deliver = (e: FleetEvent) => {
      if (stopped || e.eventId <= cursor) return;
      cursor = e.eventId;
      // As for live events (Listeners): a throwing listener is logged, and the replay goes on.
      try {
        listener(e);
      } catch (err) {
        this.log.error({ err }, 'fleet event watcher threw');
      }
    };
    const unsubscribe = this.listeners.on('recorded', (e) => (replaying ? heardMeanwhile.push(e) : deliver(e)));
    if (replaying) {
      void (async () => {
        try {
          for (;;) {
            const page = await this.repo.listAfter(cursor, REPLAY_PAGE);
            for (const e of page) deliver(e);
            if (stopped || page.length < REPLAY_PAGE) break;
          }
        } catch (err) {
          this.log.error({ err }, 'fleet event replay failed; live events still follow');
        } finally {
          replaying = false;
          for (const e of heardMeanwhile.splice(0)) deliver(e);
        }
      })();
    }
    return () => {
      stopped = true;
      unsubscribe();
    };
  }
}
