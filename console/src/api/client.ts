// One fetch wrapper for the public API: JSON in and out, the flat error shape turned into ApiError,
// and a 401 on a platform call ends the session.
import { endSession, session } from './session.ts';

export interface ErrorBody {
  code: string;
  message: string;
  details: unknown;
  hint: string | null;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
    readonly hint: string | null,
    readonly requestId: string | null,
  ) {
    super(message);
  }

  /** The field or column the server named in `details` (422 validation, row errors). */
  get field(): string | null {
    const d = this.details as Record<string, unknown> | null;
    if (d && typeof d === 'object') {
      if (typeof d.column === 'string') return d.column;
      if (typeof d.field === 'string') return d.field;
    }
    return null;
  }
}

export interface Reply<T> {
  status: number;
  headers: Headers;
  data: T;
}

export interface CallOptions {
  body?: unknown;
  query?: Record<string, string | number | undefined> | URLSearchParams;
  headers?: Record<string, string>;
  /** false: a sign-in or sign-up call, whose 401 is an answer rather than an ended session */
  auth?: boolean;
  signal?: AbortSignal;
}

function url(path: string, query: CallOptions['query']): string {
  if (!query) return path;
  const q = query instanceof URLSearchParams ? query : new URLSearchParams();
  if (!(query instanceof URLSearchParams)) for (const [k, v] of Object.entries(query)) if (v !== undefined) q.set(k, String(v));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

async function errorOf(res: Response): Promise<ApiError> {
  const requestId = res.headers.get('x-request-id');
  let body: Partial<ErrorBody> = {};
  try {
    body = (await res.json()) as ErrorBody;
  } catch {
    // not JSON (a proxy's error page): the status says enough
  }
  return new ApiError(res.status, body.code ?? 'http_error', body.message ?? `The server answered ${res.status}.`, body.details ?? null, body.hint ?? null, requestId);
}

export async function call<T>(method: string, path: string, opts: CallOptions = {}): Promise<Reply<T>> {
  const headers: Record<string, string> = { accept: 'application/json', ...opts.headers };
  const token = opts.auth === false ? null : session()?.token;
  if (token) headers.authorization = `Bearer ${token}`;
  if (opts.body !== undefined) headers['content-type'] = 'application/json';
  let res: Response;
  try {
    res = await fetch(url(path, opts.query), { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body), signal: opts.signal });
  } catch (err) {
    if ((err as Error).name === 'AbortError') throw err;
    throw new ApiError(0, 'network_error', 'The service could not be reached. Check your connection and try again.', null, null, null);
  }
  if (!res.ok) {
    const err = await errorOf(res);
    if (res.status === 401 && opts.auth !== false) endSession('Your session has ended. Sign in again.');
    throw err;
  }
  const text = res.status === 204 || method === 'HEAD' ? '' : await res.text();
  return { status: res.status, headers: res.headers, data: (text ? JSON.parse(text) : undefined) as T };
}

export const api = {
  get: async <T>(path: string, opts?: CallOptions) => (await call<T>('GET', path, opts)).data,
  post: async <T>(path: string, body?: unknown, opts?: CallOptions) => (await call<T>('POST', path, { ...opts, body })).data,
  patch: async <T>(path: string, body: unknown, opts?: CallOptions) => (await call<T>('PATCH', path, { ...opts, body })).data,
  put: async <T>(path: string, body: unknown, opts?: CallOptions) => (await call<T>('PUT', path, { ...opts, body })).data,
  del: async (path: string, opts?: CallOptions) => void (await call<void>('DELETE', path, opts)),
};

/** A path segment, encoded. */
export const seg = encodeURIComponent;
