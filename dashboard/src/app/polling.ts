// Data a page shows and keeps fresh: read at once, then every intervalMs while the tab is visible
// (a hidden tab reads nothing; it reads again the moment it is shown), or only when asked (no
// interval: a form is not read again under the person's hands). A failed read keeps the last data
// and says why.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeFailure } from './api';

export interface Polled<T> {
  data: T | undefined;
  /** Why the last read failed; undefined after a good one. */
  error: string | undefined;
  /** Read again now (after a write the page made). */
  refresh: () => void;
}

export function usePolled<T>(read: () => Promise<T>, intervalMs: number | undefined, deps: readonly unknown[] = []): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const readRef = useRef(read);
  readRef.current = read;
  const generation = useRef(0);

  const refresh = useCallback(() => {
    const mine = ++generation.current;
    readRef.current().then(
      (value) => {
        if (mine !== generation.current) return; // a later read has begun: its answer wins
        setData(value);
        setError(undefined);
      },
      (failure: unknown) => {
        if (mine === generation.current) setError(describeFailure(failure));
      },
    );
  }, []);

  useEffect(() => {
    setData(undefined);
    refresh();
    if (intervalMs === undefined) {
      return () => {
        generation.current++;
      };
    }
    let timer: ReturnType<typeof setInterval> | undefined;
    const schedule = () => {
      clearInterval(timer);
      timer = document.visibilityState === 'visible' ? setInterval(refresh, intervalMs) : undefined;
    };
    const onVisibility = () => {
      if (document.visibilityState === 'visible') refresh();
      schedule();
    };
    schedule();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      generation.current++;
      clearInterval(timer);
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [intervalMs, refresh, ...deps]);

  return { data, error, refresh };
}
