// Page routes inside the dashboard's base path, on the History API: one HTML shell is served for
// every path (control plane), and the app picks the page from location.pathname.
import { useEffect, useState } from 'preact/hooks';

type RouteListener = () => void;
const listeners = new Set<RouteListener>();

export class Router {
  constructor(readonly basePath: string) {
    addEventListener('popstate', () => this.changed());
  }

  /** The current path inside the base path: `/`, `/account`, `/projects/p_1/builds`. */
  current(): string {
    const path = location.pathname.startsWith(this.basePath) ? location.pathname.slice(this.basePath.length) : location.pathname;
    return path === '' ? '/' : path;
  }

  /** The address of an app path, for links. */
  href(path: string): string {
    return `${this.basePath}${path === '/' ? '/' : path}`;
  }

  navigate(path: string, options: { replace?: boolean } = {}): void {
    if (options.replace) history.replaceState(null, '', this.href(path));
    else history.pushState(null, '', this.href(path));
    this.changed();
  }

  private changed(): void {
    for (const listener of listeners) listener();
  }
}

/** The current app path, re-rendering the component when it changes. */
export function useRoutePath(router: Router): string {
  const [path, setPath] = useState(router.current());
  useEffect(() => {
    const listener = () => setPath(router.current());
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
    };
  }, [router]);
  return path;
}
