// Runs delivered commands exactly once per command_id: a repeat is answered from the journal
// (or with ACCEPTED while the first run is still going), never run again.
import type { Logger } from 'pino';
import type { CommandJournal, CommandOutcome } from './journal';
import type { AgentAck, DeliveredCommand } from '@pixelfleet/proto';
import { CommandFailure, type CommandHandlers } from './command';

export class CommandExecutor {
  private readonly inFlight = new Set<string>();
  /** How many commands were actually run (not answered from the journal); for diagnostics and tests. */
  runs = 0;

  constructor(
    private readonly journal: CommandJournal,
    private readonly handlers: CommandHandlers,
    /** Sends an ack on whatever stream is current; dropped while disconnected (the journal answers later). */
    private readonly sendAck: (ack: AgentAck) => void,
    private readonly now: () => number,
    private readonly log: Logger,
  ) {}

  get lastAckedSeq(): number {
    return this.journal.lastAckedSeq;
  }

  handle(d: DeliveredCommand): void {
    const known = this.journal.outcomeOf(d.commandId);
    if (known) {
      this.log.debug({ commandId: d.commandId, seq: d.seq }, 'command delivered again; answering from the journal');
      this.sendAck(finalAck(d.commandId, known));
      return;
    }
    if (this.inFlight.has(d.commandId)) {
      this.sendAck(progressAck(d, 'ACCEPTED', 0));
      return;
    }
    if (d.notAfterMs !== undefined && this.now() > d.notAfterMs) {
      this.finish(d, { seq: d.seq, phase: 'FAILED', errorCode: 'STALE', errorMessage: 'command arrived after its deadline' });
      return;
    }
    this.inFlight.add(d.commandId);
    this.runs += 1;
    this.sendAck(progressAck(d, 'ACCEPTED', 0));
    // A handler that throws synchronously must still end FAILED, not stay in flight forever.
    let running: Promise<void>;
    try {
      running = this.run(d);
    } catch (err) {
      running = Promise.reject(err instanceof Error ? err : new Error(String(err)));
    }
    running.then(
      () => this.finish(d, { seq: d.seq, phase: 'SUCCEEDED', errorCode: '', errorMessage: '' }),
      (err: unknown) => {
        const outcome: CommandOutcome =
          err instanceof CommandFailure
            ? { seq: d.seq, phase: 'FAILED', errorCode: err.code, errorMessage: err.message }
            : { seq: d.seq, phase: 'FAILED', errorCode: 'INTERNAL', errorMessage: (err as Error).message };
        if (!(err instanceof CommandFailure)) this.log.error({ err, commandId: d.commandId, kind: d.command.kind }, 'command handler crashed');
        this.finish(d, outcome);
      },
    );
  }

  private run(d: DeliveredCommand): Promise<void> {
    const c = d.command;
    switch (c.kind) {
      case 'startSession':
        return this.handlers.startSession(c);
      case 'stopSession':
        return this.handlers.stopSession(c);
      case 'prepareBuild':
        return this.handlers.prepareBuild(c, (percent) => this.sendAck(progressAck(d, 'IN_PROGRESS', percent)));
      case 'deleteBuild':
        return this.handlers.deleteBuild(c);
      default: {
        const unreachable: never = c;
        return Promise.reject(new CommandFailure('UNKNOWN_COMMAND', `unknown command ${String(unreachable)}`));
      }
    }
  }

  private finish(d: DeliveredCommand, outcome: CommandOutcome): void {
    this.inFlight.delete(d.commandId);
    this.journal.record(d.commandId, outcome);
    this.sendAck(finalAck(d.commandId, outcome));
  }
}

function finalAck(commandId: string, o: CommandOutcome): AgentAck {
  return { seq: o.seq, commandId, phase: o.phase, errorCode: o.errorCode, errorMessage: o.errorMessage, progressPercent: o.phase === 'SUCCEEDED' ? 100 : 0 };
}

function progressAck(d: DeliveredCommand, phase: 'ACCEPTED' | 'IN_PROGRESS', percent: number): AgentAck {
  return { seq: d.seq, commandId: d.commandId, phase, errorCode: '', errorMessage: '', progressPercent: Math.max(0, Math.min(100, Math.round(percent))) };
}
