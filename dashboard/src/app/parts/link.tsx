// An in-app link: a real <a href> (opens in a new tab, copies, reads out as a link), followed in
// place on a plain click.
import type { ComponentChildren } from 'preact';
import { useDashboard } from '../context';

export function Link({ to, children, class: className }: { to: string; children: ComponentChildren; class?: string }) {
  const { router } = useDashboard();
  return (
    <a
      href={router.href(to)}
      class={className}
      onClick={(event) => {
        if (event.button !== 0 || event.metaKey || event.ctrlKey || event.shiftKey || event.altKey) return;
        event.preventDefault();
        router.navigate(to);
      }}
    >
      {children}
    </a>
  );
}
