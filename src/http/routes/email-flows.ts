// End-user email flows (SPEC 4.6): request endpoints answer { ok: true } whatever the address;
// consume endpoints exchange a single-use token.
import type { FastifyInstance } from 'fastify';
import type { ProjectService } from '../../services/projects.ts';
import type { EndUserService } from '../../services/end-users.ts';
import type { EmailFlowService } from '../../services/email-flows.ts';
import { userToken } from '../data-plane-auth.ts';
import { existingProject } from '../platform-auth.ts';
import * as S from '../schemas.ts';
import * as R from '../response-schemas.ts';
import { END_USER_SECURITY } from '../openapi.ts';

type P = { Params: { project_id: string } };

export function emailFlowRoutes(app: FastifyInstance, projects: ProjectService, users: EndUserService, flows: EmailFlowService): void {
  const tags = ['end-user auth'];
  const existing = existingProject(projects);

  // a request endpoint answers { ok: true } whether or not the address is registered
  const asked = { response: { 200: R.Ok }, errors: { 422: ['validation_failed', 'invalid_redirect_url'], 429: ['rate_limited'] } };
  const request = (path: string, operationId: string, summary: string, run: (pid: string, body: S.EmailRequestBody, ip: string) => Promise<unknown>) =>
    app.post<P & { Body: S.EmailRequestBody }>(`/:project_id/auth/${path}`, { schema: { tags, operationId, summary, body: S.EmailRequestBody, ...asked } }, async (req) =>
      run(await existing(req.params.project_id), req.body, req.ip),
    );
  request('magic-link', 'requestMagicLink', 'Request a magic-link email (always 200)', (pid, body, ip) => flows.requestMagicLink(pid, body, ip));
  request('password/forgot', 'requestPasswordReset', 'Request a password-reset email (always 200)', (pid, body, ip) => flows.requestPasswordReset(pid, body, ip));
  request('verify/resend', 'resendVerification', 'Resend the verification email (always 200)', (pid, body, ip) => flows.resendVerification(pid, body, ip));

  app.post<P & { Body: S.EmailChangeBody }>(
    '/:project_id/auth/email-change/request',
    {
      schema: {
        tags,
        security: END_USER_SECURITY,
        operationId: 'requestEmailChange',
        summary: 'Request an email change; the link goes to the new address (X-User-Token)',
        body: S.EmailChangeBody,
        ...asked,
      },
    },
    async (req) => {
      const pid = await existing(req.params.project_id);
      const { user, tokenHash } = await users.require(pid, userToken(req));
      return flows.requestEmailChange(pid, user, tokenHash, req.body, req.ip);
    },
  );

  const consume = (path: string, doc: { operationId: string; summary: string; response: object; conflict?: boolean }, run: (pid: string, token: string) => Promise<unknown>) => {
    const errors = { 400: ['invalid_token'], ...(doc.conflict ? { 409: ['email_taken'] } : {}) };
    const schema = { tags, operationId: doc.operationId, summary: doc.summary, body: S.TokenBody, response: doc.response, errors };
    app.post<P & { Body: S.TokenBody }>(`/:project_id/auth/${path}`, { schema }, async (req) => run(await existing(req.params.project_id), req.body.token));
  };
  const session = { 200: R.EndUserSession };
  const user = { 200: R.UserEnvelope };
  consume('magic-link/consume', { operationId: 'consumeMagicLink', summary: 'Exchange a magic-link token for a session', response: session }, (pid, token) => flows.consumeMagicLink(pid, token));
  consume('verify/confirm', { operationId: 'confirmEmail', summary: 'Confirm an email address', response: user }, (pid, token) => flows.confirmVerification(pid, token));
  consume('email-change/confirm', { operationId: 'confirmEmailChange', summary: 'Confirm the new email address', response: user, conflict: true }, (pid, token) =>
    flows.confirmEmailChange(pid, token),
  );

  app.post<P & { Body: S.PasswordResetBody }>(
    '/:project_id/auth/password/reset',
    {
      schema: {
        tags,
        operationId: 'resetPassword',
        summary: 'Set a new password with a reset token; ends every session',
        body: S.PasswordResetBody,
        response: { 200: R.UserEnvelope },
        errors: { 400: ['invalid_token'], 422: ['validation_failed'] },
      },
    },
    async (req) => flows.resetPassword(await existing(req.params.project_id), req.body),
  );
}
