import type { ComponentChildren } from 'preact';
import type { ApiError } from '../api/client.ts';
import { ErrorBox } from './ErrorBox.tsx';

/** What a screen shows before its data: loading, or the error with a retry. */
export function Pending({ error, retry }: { error: ApiError | null; retry?: () => void }) {
  if (error)
    return (
      <div class="pending">
        <ErrorBox error={error} title="Could not load." />
        {retry && (
          <button type="button" class="secondary" onClick={retry}>
            Try again
          </button>
        )}
      </div>
    );
  return (
    <p class="pending muted" aria-busy="true">
      Loading…
    </p>
  );
}

export function Empty({ title, children }: { title: string; children?: ComponentChildren }) {
  return (
    <div class="empty">
      <p class="empty-title">{title}</p>
      {children}
    </div>
  );
}
