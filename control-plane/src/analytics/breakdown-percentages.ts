// Shares of a breakdown's total, rounded so they add up: each entry's percentage has two decimals
// and the entries' percentages sum to exactly 100 (in hundredths) whenever the total is above 0.

/** Decimal places of a breakdown percentage. */
export const PERCENTAGE_DECIMALS = 2;
const UNITS = 100 * 10 ** PERCENTAGE_DECIMALS;

/**
 * Largest-remainder rounding (Hamilton's method): every share is rounded down to a hundredth of
 * a percent, then the hundredths still missing go one each to the entries that lost the most,
 * earlier entries first on a tie. When the counts add up to less than `total` (a filtered view),
 * the shares add up to their part of 100 the same way.
 */
export function percentagesOf(counts: readonly number[], total: number): number[] {
  if (total <= 0) return counts.map(() => 0);
  const exact = counts.map((c) => (c * UNITS) / total);
  const floors = exact.map(Math.floor);
  const target = Math.round((counts.reduce((a, b) => a + b, 0) * UNITS) / total);
  let missing = target - floors.reduce((a, b) => a + b, 0);
  const order = exact.map((e, i) => ({ i, rest: e - Math.floor(e) })).sort((a, b) => b.rest - a.rest || a.i - b.i);
  for (const { i } of order) {
    if (missing <= 0) break;
    floors[i] = (floors[i] ?? 0) + 1;
    missing -= 1;
  }
  return floors.map((units) => units / 10 ** PERCENTAGE_DECIMALS);
}
