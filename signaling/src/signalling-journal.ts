// What one viewer's session has said and heard on its signalling sockets, counted across every
// socket the session has had. A socket that dies takes with it whatever was in flight: a frame
// written on one side may never have been read on the other (the page's answer sent just as its
// network went, or the relay's last ICE candidates). On a resume each side says how many frames it
// has read from the other (`pixelfleetResume.received`, `pixelfleetResumed.received`), and each
// sends again, in order, what the other never got — so a negotiation caught by a drop finishes
// exactly once, nothing lost and nothing doubled. The page keeps its own count and its last frames
// the same way (web-player's signalling-resume.ts).
//
// The frames are the exact JSON text written, so a replay is byte for byte what was first sent.

/** The most frames sent that a journal keeps for a replay (a negotiation is tens; pongs come every 30 s). */
export const JOURNAL_MAX_FRAMES = 64;

/** The most bytes of sent frames a journal keeps (an offer is at most 32 KiB; typical sessions keep a few KiB). */
export const JOURNAL_MAX_BYTES = 128 * 1024;

/** What a resume sends again: the frames from the page's count on, and how many it needed that are no longer kept. */
export interface JournalReplay {
  readonly frames: readonly string[];
  readonly missed: number;
}

export class SignallingJournal {
  private receivedCount = 0;
  private sentCount = 0;
  /** The last frames sent: kept[i] was frame number sentCount - kept.length + i (0-based). */
  private readonly kept: string[] = [];
  private keptBytes = 0;

  /** Frames read from the page on the session's sockets (a resume handshake is not one). */
  get received(): number {
    return this.receivedCount;
  }

  /** Frames written to the page on the session's sockets (a resume's answer and its replays are not new ones). */
  get sent(): number {
    return this.sentCount;
  }

  recordReceived(): void {
    this.receivedCount += 1;
  }

  recordSent(frame: string): void {
    this.sentCount += 1;
    this.kept.push(frame);
    this.keptBytes += frame.length;
    while (this.kept.length > JOURNAL_MAX_FRAMES || (this.keptBytes > JOURNAL_MAX_BYTES && this.kept.length > 1)) {
      this.keptBytes -= this.kept.shift()!.length;
    }
  }

  /**
   * The frames a page that has read `pageReceived` of them never got, oldest first; undefined when
   * the count cannot be ours (more than was ever sent: a page of another run, or a forged count).
   */
  since(pageReceived: number): JournalReplay | undefined {
    if (!Number.isSafeInteger(pageReceived) || pageReceived < 0 || pageReceived > this.sentCount) return undefined;
    const firstKept = this.sentCount - this.kept.length;
    const from = Math.max(pageReceived, firstKept);
    return { frames: this.kept.slice(from - firstKept), missed: from - pageReceived };
  }
}
