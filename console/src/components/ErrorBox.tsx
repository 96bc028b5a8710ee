import type { ApiError } from '../api/client.ts';

/** The server's own sentence, its code and hint; the request id for a 5xx. */
export function ErrorBox({ error, title }: { error: ApiError | Error | null | undefined; title?: string }) {
  if (!error) return null;
  const e = error as Partial<ApiError>;
  return (
    <div class="error-box" role="alert">
      {title && <strong>{title} </strong>}
      <span>{error.message}</span>
      {e.hint && <span class="hint"> {e.hint}</span>}
      {e.code && e.code !== 'network_error' && (
        <span class="code">
          {' '}({e.status} {e.code}
          {e.status !== undefined && e.status >= 500 && e.requestId ? `, request ${e.requestId}` : ''})
        </span>
      )}
    </div>
  );
}
