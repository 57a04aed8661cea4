// One line of `pixelfleet-agent doctor`: what was checked, its verdict and what was found.

export type DoctorVerdict = 'ok' | 'warn' | 'fail';

export interface DoctorLine {
  check: string;
  verdict: DoctorVerdict;
  detail: string;
}

/** `ok    control plane  cp.example.com:7443 → …`, one line per check. */
export function formatDoctorLines(lines: readonly DoctorLine[]): string {
  return lines.map((l) => `${l.verdict.padEnd(5)} ${l.check.padEnd(14)} ${l.detail}\n`).join('');
}
