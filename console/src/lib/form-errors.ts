// A server error belongs to the form field it names (details.field / details.column) when the form
// has that field; otherwise the form shows it as a whole.
import type { ApiError } from '../api/client.ts';

export function fieldError(error: ApiError | null, field: string): string | null {
  return error && error.field === field ? error.message : null;
}

export function formError(error: ApiError | null, fields: readonly string[]): ApiError | null {
  return error && error.field !== null && fields.includes(error.field) ? null : error;
}
