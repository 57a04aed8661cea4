// One row of a card's `<dl class="facts">`: a term and what it is (the grid in styles.css lays
// each `<div>` out as a cell).
import type { ComponentChildren } from 'preact';

export function Fact({ term, testId, children }: { term: string; testId?: string; children: ComponentChildren }) {
  return (
    <div>
      <dt>{term}</dt>
      <dd data-testid={testId}>{children}</dd>
    </div>
  );
}
