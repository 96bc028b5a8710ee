// One error vocabulary for the whole service: a throw site names an entry of the table
// (src/error-table.ts) and passes the values its templates need; the status and the sentences live
// in the table only. Every error leaves as the flat PostgREST shape { code, message, details, hint }.
import { ERRORS } from './error-table.ts';

type Template = string | number | null | readonly string[];

export interface ErrorSpec {
  status: number;
  message: string;
  details?: string | Readonly<Record<string, Template>>;
  hint?: string;
  headers?: Readonly<Record<string, string>>;
}

export type ErrorKey = keyof typeof ERRORS;

/** The names of the `{{name}}` holes in a template, or in every template of an entry. */
type Holes<T> = T extends `${string}{{${infer Name}}}${infer Rest}`
  ? Name | Holes<Rest>
  : T extends string | number | null | undefined | readonly string[]
    ? never
    : { [K in keyof T]: Holes<T[K]> }[keyof T];

/** `new AppError(key)` for an entry without holes, `new AppError(key, values)` otherwise, checked against the entry. */
export type AppErrorArgs = {
  [K in ErrorKey]: [Holes<(typeof ERRORS)[K]>] extends [never] ? [key: K] : [key: K, values: { [H in Holes<(typeof ERRORS)[K]>]: unknown }];
}[ErrorKey];

type Values = Readonly<Record<string, unknown>>;

const HOLE = /\{\{(\w+)\}\}/g;
const ALONE = /^\{\{(\w+)\}\}$/;

/** A list fills a sentence as `a, b, c` (in details it stays a list). */
function fill(template: string, values: Values): string {
  return template.replace(HOLE, (_, name: string) => {
    const v = values[name];
    return Array.isArray(v) ? v.map(String).join(', ') : String(v);
  });
}

/** A details template: a hole alone keeps its value's JSON type, and drops its key when the value is undefined. */
function fillDetails(template: ErrorSpec['details'], values: Values): unknown {
  const one = (t: Template): unknown => {
    if (typeof t !== 'string') return t;
    const alone = ALONE.exec(t);
    return alone ? values[alone[1]!] : fill(t, values);
  };
  if (template === undefined) return null;
  if (typeof template === 'string') return one(template) ?? null;
  const out: Record<string, unknown> = {};
  for (const [k, t] of Object.entries(template)) {
    const v = one(t);
    if (v !== undefined) out[k] = v;
  }
  return out;
}

export class AppError extends Error {
  readonly status: number;
  /** the wire code: the table key up to its first dot */
  readonly code: string;
  readonly details: unknown;
  readonly hint: string | null;
  readonly headers: Record<string, string>;

  constructor(...args: AppErrorArgs) {
    const [key] = args;
    const values: Values = args[1] ?? {};
    const spec: ErrorSpec = ERRORS[key];
    super(fill(spec.message, values));
    this.status = spec.status;
    this.code = key.split('.')[0]!;
    this.details = fillDetails(spec.details, values);
    this.hint = spec.hint === undefined ? null : fill(spec.hint, values);
    this.headers = Object.fromEntries(Object.entries(spec.headers ?? {}).map(([k, v]) => [k, fill(v, values)]));
  }

  /** The same error under another wire code (the supabase-js door answers with GoTrue's codes). */
  withCode(code: string): AppError {
    const copy = Object.assign(Object.create(AppError.prototype) as AppError, this, { code });
    Object.defineProperty(copy, 'message', { value: this.message, writable: true, configurable: true });
    return copy;
  }

  /** the response body (CONTRACT §0) */
  toJSON(): { code: string; message: string; details: unknown; hint: string | null } {
    return { code: this.code, message: this.message, details: this.details, hint: this.hint };
  }
}

/** 429 with Retry-After in whole seconds, at least one. */
export const tooManyRequests = (retryAfterSeconds: number) =>
  new AppError('rate_limited', { retry_after: Math.max(1, Math.ceil(retryAfterSeconds)) });
