// The GoTrue subset supabase-js's auth client calls, under /{project_id}/auth/v1/: a second door to
// the end-user services of SPEC 4.6 (same rules, throttles, rate limits and single-use tokens), in
// the shapes auth-js reads. The project key is checked before the body, as on the native routes.
import type { FastifyInstance, FastifyReply, FastifyRequest, HTTPMethods } from 'fastify';
import type { TSchema } from '@sinclair/typebox';
import type { DataPlaneService } from '../../../services/data-plane.ts';
import type { EndUserService } from '../../../services/end-users.ts';
import type { EmailFlowService } from '../../../services/email-flows.ts';
import { AppError } from '../../../errors.ts';
import { hashToken } from '../../../lib/tokens.ts';
import { API_VERSION, API_VERSION_HEADER, compatCaller, gotrueSession, gotrueUser, toGotrue, unsupported } from './gotrue.ts';
import * as S from './schemas.ts';
import * as R from '../../response-schemas.ts';
import { SUPABASE_SECURITY, type ErrorCodes } from '../../openapi.ts';
import { Type } from '@sinclair/typebox';

type Caller = Awaited<ReturnType<typeof compatCaller>>;
type Req = FastifyRequest<{ Params: { project_id: string; '*'?: string }; Querystring: Record<string, string | undefined>; Body: any }>;
type RateCode = 'over_email_send_rate_limit' | 'over_request_rate_limit';

const OTP_TYPES = 'magiclink, email, signup, recovery and email_change';

function noPhone(phone: string | undefined): void {
  if (phone !== undefined) throw new AppError('validation_failed.compat', { field: 'phone', reason: 'not_supported', message: 'Phone numbers are not supported by Baseplate: use an email address.' });
}
function noMetadata(data: Record<string, unknown> | undefined): void {
  if (data !== undefined && Object.keys(data).length > 0) throw new AppError('validation_failed.compat', { field: 'data', reason: 'not_supported', message: 'User metadata (options.data) is not supported by Baseplate: keep it in a table of your own.' });
}
function noPkce(body: { code_challenge?: string | null }): void {
  if (body.code_challenge) throw new AppError('validation_failed.compat', { field: 'code_challenge', reason: 'not_supported', message: "The PKCE flow is not supported by Baseplate: create the client with auth: { flowType: 'implicit' } (the default)." });
}
function requireEmail(email: string | undefined): string {
  if (email === undefined) throw new AppError('validation_failed.required', { field: 'email' });
  return email;
}
function signedIn(c: Caller): { user: NonNullable<Caller['user']>; tokenHash: string } {
  if (!c.user || c.userToken === undefined) throw new AppError('invalid_user_token.compat');
  return { user: c.user, tokenHash: hashToken(c.userToken) };
}

type RouteOptions = {
  summary: string;
  operationId: string;
  response: Record<number, TSchema>;
  errors?: ErrorCodes;
  body?: TSchema;
  querystring?: TSchema;
  rate: RateCode | ((req: Req) => RateCode);
  check?: (req: Req) => void;
};
type Run = (req: Req, c: Caller, pid: string) => Promise<unknown>;
/** Registers one GoTrue route: credentials checked before the body, errors in GoTrue's shapes. */
type Route = (method: HTTPMethods, path: string, opts: RouteOptions, run: Run) => void;

const tags = ['supabase-js compatibility'];

function compatRoute(app: FastifyInstance, dataPlane: DataPlaneService): Route {
  const callers = new WeakMap<FastifyRequest, Caller>();
  return (method, path, opts, run) => {
    const rate = (req: Req) => (typeof opts.rate === 'function' ? opts.rate(req) : opts.rate);
    app.route({
      method,
      url: `/:project_id/auth/v1/${path}`,
      schema: {
        tags,
        summary: opts.summary,
        operationId: opts.operationId,
        security: SUPABASE_SECURITY,
        response: opts.response,
        errors: opts.errors,
        ...(opts.body ? { body: opts.body } : {}),
        ...(opts.querystring ? { querystring: opts.querystring } : {}),
      },
      onRequest: async (_req: FastifyRequest, reply: FastifyReply) => {
        reply.header(API_VERSION_HEADER, API_VERSION);
      },
      // credentials before the body (unauthenticated callers learn nothing about schemas)
      preValidation: async (req: FastifyRequest) => {
        const r = req as Req;
        try {
          callers.set(req, await compatCaller(req, r.params.project_id, dataPlane));
          opts.check?.(r);
        } catch (err) {
          throw toGotrue(err, rate(r));
        }
      },
      handler: async (req: FastifyRequest, reply: FastifyReply) => {
        const r = req as Req;
        try {
          const out = await run(r, callers.get(req)!, r.params.project_id);
          return out === undefined ? reply.status(204).send() : reply.send(out);
        } catch (err) {
          throw toGotrue(err, rate(r));
        }
      },
    });
  };
}

const redirectOf = (req: Req) => req.query.redirect_to;
// a request for an email answers {} whether or not the address is registered
const emailRequest = {
  response: { 200: R.Empty },
  errors: { 422: ['validation_failed', 'email_address_invalid', 'invalid_redirect_url'], 429: ['over_email_send_rate_limit'] },
};

export function compatAuthRoutes(app: FastifyInstance, dataPlane: DataPlaneService, users: EndUserService, flows: EmailFlowService): void {
  const route = compatRoute(app, dataPlane);
  sessionRoutes(route, users, flows);
  userRoutes(route, users, flows);
  emailRoutes(route, flows);
  verifyRoute(route, flows);
  otherRoutes(app, dataPlane);
}

/** signUp, signInWithPassword, signOut */
function sessionRoutes(route: Route, users: EndUserService, flows: EmailFlowService): void {
  route('POST', 'signup', {
      summary: 'signUp: register (a session, or the user when email confirmation is required)',
      operationId: 'supabaseSignUp',
      response: { 200: Type.Union([R.GotrueSession, R.GotrueUser]) },
      errors: { 409: ['user_already_exists'], 422: ['validation_failed', 'weak_password', 'email_address_invalid', 'invalid_redirect_url'] },
      body: S.SignUp,
      querystring: S.RedirectQuery,
      rate: 'over_email_send_rate_limit',
    }, async (req, _c, pid) => {
    const b = req.body as S.SignUp;
    noPhone(b.phone);
    noMetadata(b.data);
    noPkce(b);
    const out = await flows.register(pid, { email: requireEmail(b.email), password: b.password }, redirectOf(req));
    return out.token === null ? gotrueUser(out.user) : gotrueSession(out);
  });

  route(
    'POST',
    'token',
    {
      summary: 'signInWithPassword (grant_type=password); refresh_token is refused: Baseplate has no refresh',
      operationId: 'supabaseToken',
      response: { 200: R.GotrueSession },
      errors: {
        400: ['refresh_token_not_found', 'unsupported_grant_type'],
        401: ['invalid_credentials'],
        403: ['email_not_confirmed'],
        422: ['validation_failed'],
        429: ['over_request_rate_limit'],
      },
      body: S.PasswordGrant,
      rate: 'over_request_rate_limit',
      check: (req) => {
        const grant = req.query.grant_type;
        if (grant === 'refresh_token')
          throw new AppError('refresh_token_not_found');
        if (grant !== 'password')
          throw grant === undefined ? new AppError('unsupported_grant_type.missing') : new AppError('unsupported_grant_type', { grant: String(grant).slice(0, 40) });
      },
    },
    async (req, _c, pid) => {
      const b = req.body as S.PasswordGrant;
      noPhone(b.phone);
      return gotrueSession(await users.login(pid, { email: requireEmail(b.email), password: b.password }, req.ip));
    },
  );

  route('POST', 'logout', {
      summary: 'signOut: scope global (default), local or others',
      operationId: 'supabaseLogout',
      response: { 204: R.NoContent },
      errors: { 401: ['session_not_found'], 422: ['validation_failed'] },
      rate: 'over_request_rate_limit',
    }, async (req, c, pid) => {
    const scope = req.query.scope ?? 'global';
    if (scope !== 'global' && scope !== 'local' && scope !== 'others') throw new AppError('validation_failed.compat', { field: 'scope', reason: 'not_allowed', message: "scope is one of 'global', 'local' or 'others'." });
    const s = signedIn(c);
    await users.endSessions(pid, s.user.id, s.tokenHash, scope);
    return undefined;
  });
}

/** getUser, updateUser */
function userRoutes(route: Route, users: EndUserService, flows: EmailFlowService): void {
  route('GET', 'user', { summary: 'getUser: the signed-in user', operationId: 'supabaseGetUser', response: { 200: R.GotrueUser }, errors: { 401: ['session_not_found'] }, rate: 'over_request_rate_limit' }, async (_req, c) => gotrueUser(signedIn(c).user));

  route(
    'PUT',
    'user',
    {
      summary: 'updateUser: a new password (current_password, or a sign-in in the last 15 minutes) or an email change (a link to the new address)',
      operationId: 'supabaseUpdateUser',
      response: { 200: R.GotrueUser },
      errors: {
        401: ['session_not_found'],
        403: ['invalid_credentials', 'reauthentication_needed'],
        422: ['validation_failed', 'weak_password', 'email_address_invalid', 'invalid_redirect_url'],
        429: ['over_request_rate_limit', 'over_email_send_rate_limit'],
      },
      body: S.UserUpdate,
      querystring: S.RedirectQuery,
      rate: (req) => ((req.body as S.UserUpdate | undefined)?.password !== undefined ? 'over_request_rate_limit' : 'over_email_send_rate_limit'),
    },
    async (req, c, pid) => {
      const s = signedIn(c);
      const b = req.body as S.UserUpdate;
      noPhone(b.phone);
      noMetadata(b.data);
      if (b.nonce !== undefined) throw new AppError('validation_failed.compat', { field: 'nonce', reason: 'not_supported', message: 'Reauthentication nonces are not supported by Baseplate: send current_password with the new password.' });
      if (b.email !== undefined && b.password !== undefined) throw new AppError('validation_failed.compat', { field: 'email', reason: 'not_allowed', message: 'Change the email and the password in two calls.' });
      if (b.current_password !== undefined && b.password === undefined) throw new AppError('validation_failed.compat', { field: 'current_password', reason: 'not_allowed', message: 'current_password goes with a new password.' });
      if (b.password !== undefined) return gotrueUser(await users.changePassword(pid, s, { password: b.password, current_password: b.current_password }, req.ip));
      if (b.email !== undefined) {
        noPkce(b);
        await flows.requestEmailChange(pid, s.user, s.tokenHash, { new_email: b.email, redirect_url: redirectOf(req) }, req.ip);
      }
      // the address changes when the link sent to the new one is used (verifyOtp type email_change)
      return gotrueUser(s.user);
    },
  );
}

/** the requests for an email: signInWithOtp, resetPasswordForEmail, resend */
function emailRoutes(route: Route, flows: EmailFlowService): void {
  route('POST', 'otp', {
      summary: 'signInWithOtp: a magic-link email (always 200; unknown addresses get nothing)',
      operationId: 'supabaseOtp',
      ...emailRequest,
      body: S.Otp,
      querystring: S.RedirectQuery,
      rate: 'over_email_send_rate_limit',
    }, async (req, _c, pid) => {
    const b = req.body as S.Otp;
    noPhone(b.phone);
    noMetadata(b.data);
    noPkce(b);
    await flows.requestMagicLink(pid, { email: requireEmail(b.email), redirect_url: redirectOf(req) }, req.ip);
    return {};
  });

  route('POST', 'recover', {
      summary: 'resetPasswordForEmail: a password-reset email (always 200)',
      operationId: 'supabaseRecover',
      ...emailRequest,
      body: S.Recover,
      querystring: S.RedirectQuery,
      rate: 'over_email_send_rate_limit',
    }, async (req, _c, pid) => {
    const b = req.body as S.Recover;
    noPkce(b);
    await flows.requestPasswordReset(pid, { email: b.email, redirect_url: redirectOf(req) }, req.ip);
    return {};
  });

  route('POST', 'resend', {
      summary: "resend: the verification email again (type 'signup'; always 200)",
      operationId: 'supabaseResend',
      ...emailRequest,
      body: S.Resend,
      querystring: S.RedirectQuery,
      rate: 'over_email_send_rate_limit',
    }, async (req, _c, pid) => {
    const b = req.body as S.Resend;
    noPhone(b.phone);
    noPkce(b);
    if (b.type === 'email_change') throw new AppError('validation_failed.compat', { field: 'type', reason: 'not_supported', message: "Resending an email-change link is not supported by Baseplate: call updateUser({ email }) again." });
    if (b.type !== 'signup') throw new AppError('validation_failed.compat', { field: 'type', reason: 'not_allowed', message: "resend supports type 'signup' only." });
    await flows.resendVerification(pid, { email: requireEmail(b.email), redirect_url: redirectOf(req) }, req.ip);
    return {};
  });
}

/** verifyOtp */
function verifyRoute(route: Route, flows: EmailFlowService): void {
  route('POST', 'verify', {
      summary: `verifyOtp: use the token of a link Baseplate sent (token_hash; type ${OTP_TYPES})`,
      operationId: 'supabaseVerify',
      response: { 200: Type.Union([R.GotrueSession, R.GotrueUserEnvelope]) },
      errors: { 400: ['otp_expired'], 409: ['user_already_exists'], 422: ['validation_failed', 'weak_password'] },
      body: S.Verify,
      rate: 'over_request_rate_limit',
    }, async (req, _c, pid) => {
    const b = req.body as S.Verify;
    noPhone(b.phone);
    const known = ['magiclink', 'email', 'signup', 'recovery', 'email_change'];
    if (!known.includes(b.type))
      throw new AppError('validation_failed.compat', { field: 'type', reason: 'not_allowed', message: `The OTP type '${b.type.slice(0, 32)}' is not supported by Baseplate: use ${OTP_TYPES}.` });
    if (b.token_hash === undefined)
      throw new AppError('validation_failed.compat', { field: 'token_hash', reason: 'required', message: 'Baseplate sends links, not one-time codes: pass the token from the link as token_hash.' });
    const token = b.token_hash;
    switch (b.type) {
      case 'magiclink':
        return gotrueSession(await flows.consumeMagicLink(pid, token));
      case 'recovery':
        return gotrueSession(await flows.consumeRecoveryLink(pid, token));
      case 'signup':
        return { user: gotrueUser((await flows.confirmVerification(pid, token)).user) };
      case 'email_change':
        return { user: gotrueUser((await flows.confirmEmailChange(pid, token)).user) };
      default:
        // 'email' names any emailed link in GoTrue: a magic link, else a verification link
        try {
          return gotrueSession(await flows.consumeMagicLink(pid, token));
        } catch (err) {
          if (!(err instanceof AppError) || err.code !== 'invalid_token') throw err;
          return { user: gotrueUser((await flows.confirmVerification(pid, token)).user) };
        }
    }
  });
}

function otherRoutes(app: FastifyInstance, dataPlane: DataPlaneService): void {
  // everything else auth-js can call: said plainly, never a bare "No such route"
  const named: Record<string, string> = {
    authorize: 'OAuth sign-in (signInWithOAuth)',
    factors: 'Multi-factor authentication (auth.mfa)',
    reauthenticate: 'reauthenticate() (send current_password with updateUser instead)',
    sso: 'Single sign-on (signInWithSSO)',
    admin: 'The auth admin API (auth.admin)',
    verify: 'GET /verify (Baseplate emails link to your application, which calls verifyOtp({ token_hash, type }))',
    settings: 'GET /settings',
    user: `This method on /user`,
    token: `This method on /token`,
  };
  app.route({
    method: ['GET', 'POST', 'PUT', 'PATCH', 'DELETE'],
    url: '/:project_id/auth/v1/*',
    schema: { hide: true, tags, summary: 'Other GoTrue endpoints: 404 not_supported, naming the feature' },
    onRequest: async (_req, reply) => {
      reply.header(API_VERSION_HEADER, API_VERSION);
    },
    handler: async (req) => {
      // the key first, as on every route of this door: an unknown one, or project, is 401
      await compatCaller(req, (req.params as { project_id: string }).project_id, dataPlane).catch((err) => {
        throw toGotrue(err, 'over_request_rate_limit');
      });
      const rest = ((req.params as { '*'?: string })['*'] ?? '').split('/')[0]!.split('?')[0]!;
      throw unsupported(Object.hasOwn(named, rest) ? named[rest]! : `The auth endpoint '/${rest.slice(0, 40)}'`, 'Baseplate implements the supabase-js auth calls listed in its README.');
    },
  });
}
