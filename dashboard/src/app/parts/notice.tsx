// A sentence for the person: an error (read out at once) or news (read out when the reader is idle).
import type { ComponentChildren } from 'preact';

export function Notice({ kind, children }: { kind: 'error' | 'success' | 'info'; children: ComponentChildren }) {
  return (
    <p class={`notice notice-${kind}`} role={kind === 'error' ? 'alert' : 'status'}>
      {children}
    </p>
  );
}
