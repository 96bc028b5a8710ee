// A server error belongs to the form field it names (details.field / details.column) when the form
// has that field; otherwise the form shows it as a whole.
import type { ApiError } from '../api/client.ts';

/** Whether the server's field is `field` or a part of it (`redirect_urls[1]`, `columns[0].name`). */
function names(serverField: string | null, field: string): boolean {
  return serverField === field || (serverField !== null && (serverField.startsWith(`${field}[`) || serverField.startsWith(`${field}.`)));
}

export function fieldError(error: ApiError | null, field: string): string | null {
  return error && names(error.field, field) ? error.message : null;
}

export function formError(error: ApiError | null, fields: readonly string[]): ApiError | null {
  return error && fields.some((f) => names(error.field, f)) ? null : error;
}
