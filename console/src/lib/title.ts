import { useEffect } from 'preact/hooks';

/** The window's title for a screen. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · Baseplate`;
  }, [title]);
}
