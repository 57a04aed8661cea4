// What one viewer leg sent, by the sequence number the viewer saw, to answer its NACKs: a packet
// lost toward one viewer is resent to that viewer only, from this leg's own copy. werift's sender
// keeps 128 packets, under half of one 1080p keyframe (300–1,000 KB is 250–850 packets), so a
// loss early in a keyframe could never be repaired and the viewer asked for yet another keyframe.
import type { RtpPacket } from 'werift';

/** Packets kept per viewer: about one second at 20 Mbps (~1,900 packets/s of 1,200 bytes). */
export const SEND_HISTORY_PACKETS = 2_048;

/**
 * Times one packet is resent at most. A browser NACKs a packet again only after a round trip, a
 * few times; a viewer NACKing everything over and over would otherwise make the worker send it
 * its stream many times over (at most this many times, now).
 */
export const MAX_RESENDS_PER_PACKET = 3;

export class SendHistory {
  private readonly slots: (RtpPacket | undefined)[];
  /** Resends of the packet in each slot. */
  private readonly resends: Uint8Array;
  private readonly mask: number;

  /** size: a power of two. */
  constructor(size = SEND_HISTORY_PACKETS) {
    if (!Number.isInteger(Math.log2(size))) throw new Error(`SendHistory size must be a power of two (got ${size})`);
    this.slots = new Array<RtpPacket | undefined>(size).fill(undefined);
    this.resends = new Uint8Array(size);
    this.mask = size - 1;
  }

  /** Keeps a packet as it went to the viewer (its header already rewritten for this leg). */
  put(packet: RtpPacket): void {
    const slot = packet.header.sequenceNumber & this.mask;
    this.slots[slot] = packet;
    this.resends[slot] = 0;
  }

  /** The packet sent with this sequence number, if it is still held. */
  get(sequenceNumber: number): RtpPacket | undefined {
    const packet = this.slots[sequenceNumber & this.mask];
    return packet !== undefined && packet.header.sequenceNumber === (sequenceNumber & 0xffff) ? packet : undefined;
  }

  /**
   * The packet to resend for a NACK: 'gone' when no longer held, 'spent' when it was already resent
   * MAX_RESENDS_PER_PACKET times (counted as one more resend otherwise).
   */
  takeForResend(sequenceNumber: number): RtpPacket | 'gone' | 'spent' {
    const packet = this.get(sequenceNumber);
    if (packet === undefined) return 'gone';
    const slot = sequenceNumber & this.mask;
    if ((this.resends[slot] ?? 0) >= MAX_RESENDS_PER_PACKET) return 'spent';
    this.resends[slot] = (this.resends[slot] ?? 0) + 1;
    return packet;
  }

  clear(): void {
    this.slots.fill(undefined);
    this.resends.fill(0);
  }
}
