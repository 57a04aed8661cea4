// Where a session goes: among the region's placeable workers (connected, not draining, live
// build ready), the one with the most free slots; ties go to the longest-enrolled worker so
// placement is stable.

export interface PlacementCandidate {
  workerId: string;
  slots: number;
  usedSlots: number;
  enrolledAt: number;
}

export function choosePlacement(candidates: readonly PlacementCandidate[]): string | undefined {
  let best: PlacementCandidate | undefined;
  for (const c of candidates) {
    const free = c.slots - c.usedSlots;
    if (free <= 0) continue;
    if (
      best === undefined ||
      free > best.slots - best.usedSlots ||
      (free === best.slots - best.usedSlots && (c.enrolledAt < best.enrolledAt || (c.enrolledAt === best.enrolledAt && c.workerId < best.workerId)))
    ) {
      best = c;
    }
  }
  return best?.workerId;
}
