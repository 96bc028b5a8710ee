// The supabase-js door's vocabulary: its credential headers, and the GoTrue shapes auth-js reads
// (user, session, error codes). Everything here translates; the services decide.
import type { FastifyRequest } from 'fastify';
import type { DataPlaneCaller, DataPlaneService } from '../../../services/data-plane.ts';
import type { EndUser, EndUserSession } from '../../../services/end-users.ts';
import { AppError } from '../../../errors.ts';
import { bearer } from '../../platform-auth.ts';
import { userToken } from '../../data-plane-auth.ts';

/**
 * The value sessions carry as `refresh_token`. auth-js needs a non-empty one to accept a session;
 * Baseplate has no refresh (SPEC 5: a session lasts 30 days, then the user signs in again), so this
 * is no secret, and presenting it (or anything) to grant_type=refresh_token is refused with the
 * error auth-js turns into a sign-out.
 */
export const NO_REFRESH_TOKEN = 'baseplate-issues-no-refresh-tokens';

/** The response header that makes auth-js (>= 2.6x) read `code` from error bodies. */
export const API_VERSION_HEADER = 'x-supabase-api-version';
export const API_VERSION = '2024-01-01';

/**
 * supabase-js sends the project key in `apikey` and, once a user is signed in, the user's token as
 * `Authorization: Bearer`; before that it sends the key there too. A bearer equal to the key is not
 * a user token. Without an `apikey` header the bearer is the key (the native convention). Where the
 * bearer names no user, `X-User-Token` does, as on the native routes (SPEC 5): a client that speaks
 * Baseplate's own headers may use these routes too; a user token as the bearer comes first.
 */
export function compatCredentials(req: FastifyRequest): { apiKey: string | undefined; userToken: string | undefined } {
  const header = req.headers.apikey;
  const b = bearer(req);
  if (typeof header === 'string' && header.trim() !== '') {
    const apiKey = header.trim();
    return { apiKey, userToken: b !== undefined && b !== apiKey ? b : userToken(req) };
  }
  return { apiKey: b, userToken: userToken(req) };
}

/** The key, end user and schema version behind the supabase-js headers (the same one-statement resolve as the native door). */
export async function compatCaller(req: FastifyRequest, projectId: string, dataPlane: DataPlaneService): Promise<DataPlaneCaller & { userToken: string | undefined }> {
  const { apiKey, userToken } = compatCredentials(req);
  if (apiKey === undefined) throw new AppError('missing_api_key.compat');
  const caller = await dataPlane.resolve(projectId, apiKey, userToken);
  return { ...caller, userToken: caller.user ? userToken : undefined };
}

/**
 * A GoTrue user. `id` is the end user's numeric id as a decimal string (auth-js takes a response
 * for a user only when `id` is a string); `role` is the role the owner assigned (null when none);
 * Baseplate records whether an address is verified, not when, so `email_confirmed_at` is the
 * account's creation time once it is verified, and null before.
 */
export function gotrueUser(u: EndUser) {
  const confirmed = u.email_verified ? u.created_at : null;
  return {
    id: String(u.id),
    aud: 'authenticated',
    role: u.role,
    email: u.email,
    email_confirmed_at: confirmed,
    confirmed_at: confirmed,
    phone: '',
    created_at: u.created_at,
    updated_at: u.created_at,
    app_metadata: { provider: 'email', providers: ['email'] },
    user_metadata: {},
    identities: [],
    is_anonymous: false,
  };
}

/** A GoTrue session around Baseplate's own opaque 64-hex token. */
export function gotrueSession(s: EndUserSession) {
  const expiresAt = Math.floor(Date.parse(s.expires_at) / 1000);
  return {
    access_token: s.token,
    token_type: 'bearer',
    expires_in: Math.max(1, expiresAt - Math.floor(Date.now() / 1000)),
    expires_at: expiresAt,
    refresh_token: NO_REFRESH_TOKEN,
    user: gotrueUser(s.user),
  };
}

// Baseplate's codes that GoTrue names otherwise (auth-js exposes `error.code`); the status and the
// message stay Baseplate's.
const GOTRUE_CODES: Record<string, string> = {
  email_not_verified: 'email_not_confirmed',
  email_taken: 'user_already_exists',
  invalid_token: 'otp_expired',
  // auth-js turns this one into AuthSessionMissingError and forgets the stored session
  invalid_user_token: 'session_not_found',
};

/** The same error under GoTrue's code, for the compatibility auth routes. `rateLimit`: the code of a 429 there. */
export function toGotrue(err: unknown, rateLimit: 'over_email_send_rate_limit' | 'over_request_rate_limit'): unknown {
  if (!(err instanceof AppError)) return err;
  const d = err.details as { field?: string; reason?: string } | null;
  let code = GOTRUE_CODES[err.code] ?? err.code;
  if (err.code === 'rate_limited') code = rateLimit;
  else if (err.status === 422 && d?.field === 'password' && (d.reason === 'too_short' || d.reason === 'too_long')) code = 'weak_password';
  else if (err.status === 422 && (d?.field === 'email' || d?.field === 'new_email') && err.code === 'validation_failed' && d.reason !== 'required' && d.reason !== 'not_allowed') code = 'email_address_invalid';
  return code === err.code ? err : err.withCode(code);
}

export const unsupported = (what: string, hint: string | null = null) => (hint === null ? new AppError('not_supported', { what }) : new AppError('not_supported.hint', { what, hint }));
