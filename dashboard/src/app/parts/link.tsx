// An in-app link: a real <a href> (opens in a new tab, copies, reads out as a link), followed in
// place on a plain click.
import type { ComponentChildren } from 'preact';
import { useDashboard } from '../context';

export function Link({ to, children, class: className, current }: { to: string; children: ComponentChildren; class?: string | undefined; current?: boolean }) {
  const { router } = useDashboard();
  return (
    <a
      href={router.href(to)}
      class={className}
      aria-current={current ? 'page' : undefined}
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
