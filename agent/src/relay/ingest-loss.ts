// Loss on the ingest leg, repaired by NACK (RFC 4585 generic NACK) toward the app. The app runs on
// the same machine, so a packet missing here was dropped by this host (a socket buffer overflowing
// while the relay was busy), never by a network: ask for it again at once, retry on a short fixed
// period, and give it up only when the app clearly cannot resend it (then a keyframe is needed).
// Replaces werift's receiver NACK (werift 0.24.4 `NackHandler`: it NACKs every 5 ms, up to 10
// times, so libwebrtc resends one lost packet many times over into the same full buffer; it sorts
// sequence numbers as strings and stops detecting loss after a sequence-number wrap).
import type { Clock, TimerHandle } from '@pixelfleet/common';

export interface IngestLossOptions {
  /** Time between two NACKs of the same packet, ms. */
  retryMs: number;
  /** NACKs per packet before it is given up. */
  maxNacks: number;
  /** Packets tracked as missing at once; beyond it the oldest are given up. */
  maxMissing: number;
  /** A jump of more sequence numbers than this (either way) is a new stream origin, not loss. */
  maxGap: number;
}

/** The app resends within ~1 ms on loopback, but a keyframe burst can queue it in its pacer. */
export const DEFAULT_INGEST_LOSS: IngestLossOptions = { retryMs: 30, maxNacks: 8, maxMissing: 1_000, maxGap: 3_000 };

export interface IngestLossHooks {
  /** Send one generic NACK listing these (16-bit) sequence numbers. */
  nack(sequenceNumbers: number[]): void;
  /** Packets were given up (never arrived after maxNacks NACKs, or pushed out): the picture needs a keyframe. */
  abandoned(count: number): void;
}

export interface IngestLossStats {
  /** Sequence numbers found missing (gaps in the stream). */
  packetsMissing: number;
  /** NACK packets sent to the app. */
  nacksSent: number;
  /** Missing packets that arrived later (retransmitted or reordered). */
  packetsRecovered: number;
  /** Missing packets given up. */
  packetsAbandoned: number;
}

interface Missing {
  /** NACKs sent for it so far. */
  nacks: number;
  lastNackMs: number;
}

export class IngestLossTracker {
  /** Highest extended sequence number seen (16-bit sequence plus wrap count), or undefined. */
  private highest: number | undefined;
  private readonly missing = new Map<number, Missing>();
  private timer: TimerHandle | undefined;
  private closed = false;
  private readonly counters: IngestLossStats = { packetsMissing: 0, nacksSent: 0, packetsRecovered: 0, packetsAbandoned: 0 };

  constructor(
    private readonly hooks: IngestLossHooks,
    private readonly clock: Clock,
    private readonly options: IngestLossOptions = DEFAULT_INGEST_LOSS,
  ) {}

  /** One packet of the stream arrived (a retransmission included), by its 16-bit sequence number. */
  received(sequenceNumber: number): void {
    if (this.closed) return;
    if (this.highest === undefined) {
      this.highest = sequenceNumber;
      return;
    }
    const extended = this.extend(sequenceNumber);
    const ahead = extended - this.highest;
    if (Math.abs(ahead) > this.options.maxGap) {
      // A new origin (the app restarted its stream), not loss nor reordering: nothing is owed.
      this.giveUp([...this.missing.keys()]);
      this.highest = sequenceNumber;
      return;
    }
    if (ahead <= 0) {
      if (this.missing.delete(extended)) this.counters.packetsRecovered++;
      return;
    }
    const now = this.clock.now();
    const fresh: number[] = [];
    for (let seq = this.highest + 1; seq < extended; seq++) {
      this.missing.set(seq, { nacks: 1, lastNackMs: now });
      fresh.push(seq);
    }
    this.highest = extended;
    if (fresh.length === 0) return;
    this.counters.packetsMissing += fresh.length;
    if (this.missing.size > this.options.maxMissing) {
      this.giveUp([...this.missing.keys()].slice(0, this.missing.size - this.options.maxMissing));
    }
    // First NACK at once: the app still holds the packet and the sooner it resends, the less the
    // viewer waits. Later rounds come from the timer.
    this.sendNack(fresh.filter((seq) => this.missing.has(seq)));
    this.schedule();
  }

  stats(): IngestLossStats {
    return { ...this.counters };
  }

  /** Packets missing right now. */
  get pending(): number {
    return this.missing.size;
  }

  close(): void {
    this.closed = true;
    this.timer?.cancel();
    this.timer = undefined;
    this.missing.clear();
  }

  private schedule(): void {
    if (this.timer !== undefined || this.closed || this.missing.size === 0) return;
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.retry();
    }, this.options.retryMs);
  }

  private retry(): void {
    if (this.closed) return;
    const now = this.clock.now();
    const again: number[] = [];
    const expired: number[] = [];
    for (const [seq, entry] of this.missing) {
      if (now - entry.lastNackMs < this.options.retryMs) continue;
      if (entry.nacks >= this.options.maxNacks) {
        expired.push(seq);
        continue;
      }
      entry.nacks++;
      entry.lastNackMs = now;
      again.push(seq);
    }
    this.giveUp(expired);
    this.sendNack(again);
    this.schedule();
  }

  private giveUp(extended: number[]): void {
    if (extended.length === 0) return;
    for (const seq of extended) this.missing.delete(seq);
    this.counters.packetsAbandoned += extended.length;
    this.hooks.abandoned(extended.length);
  }

  private sendNack(extended: number[]): void {
    if (extended.length === 0) return;
    this.counters.nacksSent++;
    this.hooks.nack(extended.map((seq) => seq & 0xffff));
  }

  /** The extended sequence number closest to the highest seen (RFC 3550 A.1 style unwrapping). */
  private extend(sequenceNumber: number): number {
    const highest = this.highest ?? sequenceNumber;
    const base = highest - (highest & 0xffff);
    let candidate = base + sequenceNumber;
    if (candidate - highest > 0x8000) candidate -= 0x10000;
    else if (highest - candidate > 0x8000) candidate += 0x10000;
    return candidate;
  }
}
