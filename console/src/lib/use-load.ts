// Loading data for a screen: the latest answer, the error, and reload(). An answer that arrives
// after the inputs changed (or the screen went away) is dropped.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import type { ApiError } from '../api/client.ts';

export interface Loaded<T> {
  data: T | undefined;
  error: ApiError | null;
  loading: boolean;
  reload: () => Promise<void>;
  /** replaces the data without a request (after a write that returned the new state) */
  set: (data: T) => void;
}

export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error: ApiError | null; loading: boolean }>({ error: null, loading: true });
  const generation = useRef(0);
  const reload = useCallback(async () => {
    const mine = ++generation.current;
    setState((s) => ({ ...s, loading: true }));
    try {
      const data = await load();
      if (mine === generation.current) setState({ data, error: null, loading: false });
    } catch (err) {
      if (mine === generation.current) setState((s) => ({ data: s.data, error: err as ApiError, loading: false }));
    }
  }, deps);
  useEffect(() => {
    void reload();
    return () => void generation.current++;
  }, [reload]);
  return { ...state, reload, set: (data: T) => setState({ data, error: null, loading: false }) } as Loaded<T>;
}

/** Runs a write: busy while it runs, its ApiError kept for the form. */
export function useAction<A extends unknown[], R>(fn: (...args: A) => Promise<R>) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<ApiError | null>(null);
  const run = async (...args: A): Promise<R | undefined> => {
    setBusy(true);
    setError(null);
    try {
      return await fn(...args);
    } catch (err) {
      setError(err as ApiError);
      return undefined;
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, setError };
}

/** A form's submit handler that runs `fn` instead of navigating. */
export function submitWith(fn: () => unknown) {
  return (e: Event) => {
    e.preventDefault();
    void fn();
  };
}
