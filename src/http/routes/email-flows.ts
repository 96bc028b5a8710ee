// End-user email flows (SPEC 4.6): request endpoints answer { ok: true } whatever the address;
// consume endpoints exchange a single-use token.
import type { FastifyInstance } from 'fastify';
import type { ProjectService } from '../../services/projects.ts';
import type { EndUserService } from '../../services/end-users.ts';
import type { EmailFlowService } from '../../services/email-flows.ts';
import { userToken } from '../data-plane-auth.ts';
import { existingProject } from '../platform-auth.ts';
import * as S from '../schemas.ts';

type P = { Params: { project_id: string } };

export function emailFlowRoutes(app: FastifyInstance, projects: ProjectService, users: EndUserService, flows: EmailFlowService): void {
  const tags = ['end-user auth'];
  const existing = existingProject(projects);

  const request = (path: string, summary: string, run: (pid: string, body: S.EmailRequestBody, ip: string) => Promise<unknown>) =>
    app.post<P & { Body: S.EmailRequestBody }>(`/:project_id/auth/${path}`, { schema: { tags, summary, body: S.EmailRequestBody } }, async (req) =>
      run(await existing(req.params.project_id), req.body, req.ip),
    );
  request('magic-link', 'Request a magic-link email (always 200)', (pid, body, ip) => flows.requestMagicLink(pid, body, ip));
  request('password/forgot', 'Request a password-reset email (always 200)', (pid, body, ip) => flows.requestPasswordReset(pid, body, ip));
  request('verify/resend', 'Resend the verification email (always 200)', (pid, body, ip) => flows.resendVerification(pid, body, ip));

  app.post<P & { Body: S.EmailChangeBody }>(
    '/:project_id/auth/email-change/request',
    { schema: { tags, summary: 'Request an email change; the link goes to the new address (X-User-Token)', body: S.EmailChangeBody } },
    async (req) => {
      const pid = await existing(req.params.project_id);
      const { user, tokenHash } = await users.require(pid, userToken(req));
      return flows.requestEmailChange(pid, user, tokenHash, req.body, req.ip);
    },
  );

  const consume = (path: string, summary: string, run: (pid: string, token: string) => Promise<unknown>) =>
    app.post<P & { Body: S.TokenBody }>(`/:project_id/auth/${path}`, { schema: { tags, summary, body: S.TokenBody } }, async (req) =>
      run(await existing(req.params.project_id), req.body.token),
    );
  consume('magic-link/consume', 'Exchange a magic-link token for a session', (pid, token) => flows.consumeMagicLink(pid, token));
  consume('verify/confirm', 'Confirm an email address', (pid, token) => flows.confirmVerification(pid, token));
  consume('email-change/confirm', 'Confirm the new email address', (pid, token) => flows.confirmEmailChange(pid, token));

  app.post<P & { Body: S.PasswordResetBody }>(
    '/:project_id/auth/password/reset',
    { schema: { tags, summary: 'Set a new password with a reset token; ends every session', body: S.PasswordResetBody } },
    async (req) => flows.resetPassword(await existing(req.params.project_id), req.body),
  );
}
