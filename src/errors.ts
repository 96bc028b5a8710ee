// One error vocabulary for the whole service. Every error leaves as the flat PostgREST shape:
// { code, message, details, hint }.
export class AppError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown = null,
    readonly hint: string | null = null,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

export const badRequest = (code: string, message: string, details: unknown = null) => new AppError(400, code, message, details);
export const unauthorized = (code = 'invalid_token', message = 'The credential is missing, unknown, expired or revoked.') =>
  new AppError(401, code, message, null, null, { 'WWW-Authenticate': 'Bearer' });
export const forbidden = (code: string, message: string, details: unknown = null) => new AppError(403, code, message, details);
export const notFound = (what = 'resource') => new AppError(404, 'not_found', `No such ${what}.`);
export const conflict = (code: string, message: string, details: unknown = null) => new AppError(409, code, message, details);
export const invalid = (field: string, reason: string, message?: string, code = 'validation_failed') =>
  new AppError(422, code, message ?? `The field '${field}' is invalid (${reason}).`, { field, reason });
export const tooManyRequests = (retryAfterSeconds: number) =>
  new AppError(429, 'rate_limited', 'Too many requests; try again later.', null, null, {
    'Retry-After': String(Math.max(1, Math.ceil(retryAfterSeconds))),
  });
