// Records fleet events durably and fans them out to live watchers (admin WatchEvents).
import type { Logger } from 'pino';
import { Listeners, type Clock } from '@pixelfleet/common';
import type { EventsRepository, FleetEvent } from '../repositories/events';

export type EventListener = (event: FleetEvent) => void;

export class EventLog {
  /** A throwing watcher is logged and skipped: the event is already recorded, and the others still hear it. */
  private readonly listeners: Listeners<{ recorded: [event: FleetEvent] }>;

  constructor(
    private readonly repo: EventsRepository,
    private readonly clock: Clock,
    log: Logger,
  ) {
    this.listeners = new Listeners((_event, err) => log.error({ err }, 'fleet event watcher threw'));
  }

  record(type: string, about: { workerId?: string; sessionId?: string; projectId?: string }, data: Record<string, unknown> = {}): FleetEvent {
    const event = this.repo.append({
      type,
      occurredAt: this.clock.now(),
      workerId: about.workerId,
      sessionId: about.sessionId,
      projectId: about.projectId,
      data,
    });
    this.listeners.emit('recorded', event);
    return event;
  }

  /** Stored events with an id above afterId, oldest first, at most limit (a watch's page). */
  after(afterId: number, limit: number): FleetEvent[] {
    return this.repo.listAfter(afterId, limit);
  }

  /** The newest event's id (0 when none was ever recorded). */
  lastId(): number {
    return this.repo.lastId();
  }

  /**
   * Replays events after afterId (0: none, only new ones; 'first': all), then delivers new events; returns
   * the unsubscribe function. record() and follow() run synchronously on one thread, so no
   * event can fall between the replay and the subscription. The replay is synchronous: for
   * listeners in this process; a stream to a client uses EventWatch (paced by the client).
   */
  follow(afterId: number | 'first', listener: EventListener): () => void {
    // 'first': every stored event, from the oldest retention kept.
    for (let cursor = afterId === 'first' ? 0 : afterId; afterId === 'first' || afterId > 0; ) {
      const page = this.repo.listAfter(cursor, 500);
      for (const e of page) {
        listener(e);
        cursor = e.eventId;
      }
      if (page.length < 500) break;
    }
    return this.listeners.on('recorded', listener);
  }
}
