// The figures a keyframe moment test prints (relay-keyframe-moments, chromium-app-viewer), one
// `MOMENT {json}` line per case, and the reader `npm run bench:moments` uses to put many runs of
// those tests side by side. One format, so the tests and the benchmark cannot drift apart.

/** What every moment reports; any other field is detail for a reader of the test's output. */
export interface MomentFigures {
  /** The case, e.g. `late viewer (720p30)`. */
  readonly moment: string;
  /** Each keyframe the app made after the relay asked: request → keyframe encoded, ms (relay-side cases). */
  readonly requestToKeyframeMs?: readonly number[];
  /** The viewer's peer connected → the app's next keyframe encoded, ms (whole-stack cases, where the request is inside the agent). */
  readonly connectToKeyframeMs?: number;
  /**
   * How long the viewer was without a picture, ms: from its peer connecting to its first decoded
   * frame, or, after a loss, from the relay's request to the viewer's next keyframe decoded.
   */
  readonly pictureMs?: number;
  readonly [detail: string]: unknown;
}

const PREFIX = 'MOMENT ';

/** Prints one moment's figures (console.log: vitest shows it with the test's output). */
export function printMoment(figures: MomentFigures): void {
  console.log(`${PREFIX}${JSON.stringify(figures)}`);
}

/** Every MOMENT line in a test run's output. */
export function readMoments(output: string): MomentFigures[] {
  const moments: MomentFigures[] = [];
  for (const line of output.split('\n')) {
    const at = line.indexOf(PREFIX);
    if (at < 0) continue;
    try {
      const value = JSON.parse(line.slice(at + PREFIX.length)) as unknown;
      if (typeof value === 'object' && value !== null && typeof (value as { moment?: unknown }).moment === 'string') moments.push(value as MomentFigures);
    } catch {
      // A line cut by the reporter is not a figure.
    }
  }
  return moments;
}
