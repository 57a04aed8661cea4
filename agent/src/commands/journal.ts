// The agent's command journal: the final outcome of recent commands by command_id, and the
// highest finished seq. A command delivered again (after a reconnect or a control plane
// restart) is answered from here instead of being run twice. Kept on disk across restarts.
import { join } from 'node:path';
import { readJsonIfExists, writeJsonAtomic } from '../lib/atomic-file';

export interface CommandOutcome {
  seq: number;
  phase: 'SUCCEEDED' | 'FAILED';
  errorCode: string;
  errorMessage: string;
}

interface JournalFile {
  lastAckedSeq: number;
  outcomes: [commandId: string, outcome: CommandOutcome][];
}

/** How many outcomes are remembered; older ones are forgotten first. */
export const JOURNAL_CAPACITY = 1_000;

export class CommandJournal {
  private readonly path: string;
  private lastAcked = 0;
  private readonly outcomes = new Map<string, CommandOutcome>();

  constructor(dataDir: string) {
    this.path = join(dataDir, 'journal.json');
    const raw = readJsonIfExists(this.path) as JournalFile | undefined;
    if (raw !== undefined) {
      this.lastAcked = raw.lastAckedSeq;
      for (const [id, outcome] of raw.outcomes) this.outcomes.set(id, outcome);
    }
  }

  get lastAckedSeq(): number {
    return this.lastAcked;
  }

  outcomeOf(commandId: string): CommandOutcome | undefined {
    return this.outcomes.get(commandId);
  }

  /** Records a final outcome durably before it is acked. */
  record(commandId: string, outcome: CommandOutcome): void {
    this.outcomes.delete(commandId);
    this.outcomes.set(commandId, outcome);
    while (this.outcomes.size > JOURNAL_CAPACITY) {
      const oldest = this.outcomes.keys().next().value;
      if (oldest === undefined) break;
      this.outcomes.delete(oldest);
    }
    this.lastAcked = Math.max(this.lastAcked, outcome.seq);
    writeJsonAtomic(this.path, { lastAckedSeq: this.lastAcked, outcomes: [...this.outcomes] } satisfies JournalFile);
  }
}
