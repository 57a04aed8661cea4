// The mock Unreal app's log, in Unreal's file format (`[2026.06.01-12.00.00:123][  7]LogInit: Display: …`),
// written synchronously so a crash or a kill leaves every line written so far on disk.
import { closeSync, mkdirSync, openSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';

export type Verbosity = 'Fatal' | 'Error' | 'Warning' | 'Display' | 'Log' | 'Verbose';

export interface UnrealLogOptions {
  /** Also write each line to this stream (the `-stdout` flag); default none. */
  readonly mirror?: NodeJS.WritableStream;
  /** Wall clock for timestamps (default `new Date()`); lines use UTC, like UE's default LogTimes. */
  readonly now?: () => Date;
  /** Engine frame number shown as `[  7]` (mod 1000, like GFrameCounter); default 0. */
  readonly frame?: () => number;
}

const pad = (n: number, width = 2): string => String(n).padStart(width, '0');

/** UE's `[YYYY.MM.DD-HH.MM.SS:mmm]` prefix, in UTC. */
export function formatLogTime(date: Date): string {
  return `${date.getUTCFullYear()}.${pad(date.getUTCMonth() + 1)}.${pad(date.getUTCDate())}-` +
    `${pad(date.getUTCHours())}.${pad(date.getUTCMinutes())}.${pad(date.getUTCSeconds())}:${pad(date.getUTCMilliseconds(), 3)}`;
}

/** One log line without the newline: verbosity `Log` is omitted, as UE does. */
export function formatLogLine(date: Date, frame: number, category: string, verbosity: Verbosity, message: string): string {
  const level = verbosity === 'Log' ? '' : `${verbosity}: `;
  return `[${formatLogTime(date)}][${String(frame % 1000).padStart(3, ' ')}]${category}: ${level}${message}`;
}

export class UnrealLog {
  private fd: number | undefined;
  private readonly now: () => Date;
  private readonly frame: () => number;

  private constructor(readonly path: string, fd: number, private readonly options: UnrealLogOptions) {
    this.fd = fd;
    this.now = options.now ?? (() => new Date());
    this.frame = options.frame ?? (() => 0);
  }

  /** Creates (truncating) the log file and its folder, and writes UE's `Log file open` header. */
  static open(path: string, options: UnrealLogOptions = {}): UnrealLog {
    mkdirSync(dirname(path), { recursive: true });
    const log = new UnrealLog(path, openSync(path, 'w'), options);
    const d = log.now();
    log.raw(`Log file open, ${pad(d.getUTCMonth() + 1)}/${pad(d.getUTCDate())}/${pad(d.getUTCFullYear() % 100)} ` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}`);
    return log;
  }

  write(category: string, verbosity: Verbosity, message: string): void {
    this.raw(formatLogLine(this.now(), this.frame(), category, verbosity, message));
  }

  log(category: string, message: string): void {
    this.write(category, 'Log', message);
  }

  display(category: string, message: string): void {
    this.write(category, 'Display', message);
  }

  warning(category: string, message: string): void {
    this.write(category, 'Warning', message);
  }

  error(category: string, message: string): void {
    this.write(category, 'Error', message);
  }

  /** Closes the file; later lines go to the mirror only. Idempotent. */
  close(): void {
    if (this.fd === undefined) return;
    closeSync(this.fd);
    this.fd = undefined;
  }

  private raw(line: string): void {
    const text = `${line}\n`;
    if (this.fd !== undefined) writeSync(this.fd, text);
    this.options.mirror?.write(text);
  }
}
