// The end-user email flows (SPEC 4.6 request/consume pattern, CONTRACT §6): magic link, password
// reset, email verification and email change, one sending function per flow.
//
// Request endpoints answer `{ ok: true }` whether or not the address is registered. The email is
// sent after the response, in the background, so the answer takes the same time either way and a
// slow or failing provider never delays or changes it; delivery failures are logged (reason only).
import type { Db, Engine } from '../storage/engine.ts';
import { AppError } from '../errors.ts';
import { checkEmail, checkPassword } from './accounts.ts';
import type { PasswordHasher } from '../lib/password.ts';
import type { AuthSettingsService } from './auth-settings.ts';
import type { EmailConfigService } from './email-config.ts';
import type { EmailTemplateService } from './email-templates.ts';
import type { EmailRateLimit } from './email-rate-limit.ts';
import type { PurposeTokens, Purpose } from './purpose-tokens.ts';
import type { EndUser, EndUserService, EndUserSession } from './end-users.ts';
import { linkWithToken } from '../lib/redirect-url.ts';
import { DeliveryError } from '../email/mailer.ts';

export interface FlowLog {
  warn(obj: Record<string, unknown>, msg: string): void;
}

const OK = Object.freeze({ ok: true as const });

function invalidToken(): AppError {
  return new AppError('invalid_token.purpose');
}

export class EmailFlowService {
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly engine: Engine,
    private readonly users: EndUserService,
    private readonly hasher: PasswordHasher,
    private readonly settings: AuthSettingsService,
    private readonly config: EmailConfigService,
    private readonly templates: EmailTemplateService,
    private readonly limit: EmailRateLimit,
    private readonly tokens: PurposeTokens,
    private readonly projectName: (projectId: string) => Promise<string>,
    private readonly log: FlowLog,
  ) {}

  /** Resolves once every email queued so far has been handed to its provider (or failed). */
  async settle(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled([...this.pending]);
  }

  // ---- register with confirmation (SPEC 4.6 "Email confirmation required")

  /** `redirectUrl` (checked against the redirect rules before anything is written) is where the verification link points. */
  async register(
    projectId: string,
    input: { email: string; password: string },
    redirectUrl?: string,
  ): Promise<EndUserSession | { token: null; user: EndUser; email_verification_required: true }> {
    const base = redirectUrl === undefined ? undefined : await this.settings.redirectBase(projectId, redirectUrl);
    if (!(await this.config.requiresConfirmation(projectId))) return this.users.register(projectId, input);
    const linkBase = base ?? (await this.settings.redirectBase(projectId, undefined));
    const user = await this.users.register(projectId, input, { session: false });
    // Not under the project's share: the user exists now, and a refusal would leave them without
    // their link; the password share ahead of the sign-up already bounds how many get here.
    const db = await this.engine.project(projectId);
    // null only if the owner removed the user in the meantime: then there is nobody to write to
    const token = await this.tokens.issue(db, user.id, 'email_verification', null, () => true);
    if (token !== null) {
      const link = linkWithToken(linkBase, token);
      this.queue(projectId, 'email_verification', user.email, async () => link, { email: user.email });
    }
    return { token: null, user, email_verification_required: true };
  }

  // ---- request endpoints: 200 { ok: true } always

  async requestMagicLink(projectId: string, input: { email: string; redirect_url?: string }, ip: string): Promise<typeof OK> {
    return this.request(projectId, 'magic_link', input.email, input.redirect_url, ip, async (user) => (user ? { user, to: user.email } : null));
  }

  async requestPasswordReset(projectId: string, input: { email: string; redirect_url?: string }, ip: string): Promise<typeof OK> {
    return this.request(projectId, 'password_reset', input.email, input.redirect_url, ip, async (user) => (user ? { user, to: user.email } : null));
  }

  async resendVerification(projectId: string, input: { email: string; redirect_url?: string }, ip: string): Promise<typeof OK> {
    return this.request(projectId, 'email_verification', input.email, input.redirect_url, ip, async (user) =>
      user && !user.email_verified ? { user, to: user.email, guard: (_tx, now) => !now.email_verified } : null,
    );
  }

  /** `session` is the token hash of the session that asks: the link is issued only while it lives. */
  async requestEmailChange(projectId: string, current: EndUser, session: string, input: { new_email: string; redirect_url?: string }, ip: string): Promise<typeof OK> {
    return this.request(projectId, 'email_change', input.new_email, input.redirect_url, ip, async (taken, newEmail) =>
      // the link goes to the new address only, and never to an address another user holds
      taken || newEmail === current.email ? null : { user: current, to: newEmail, newEmail, guard: (tx) => this.users.holdsSession(tx, current.id, session) },
    );
  }

  /**
   * The shared request path: validate, check the redirect (422), count against the rate limit
   * (429), then issue and queue only when `pick` says so.
   */
  private async request(
    projectId: string,
    purpose: Purpose,
    rawEmail: string,
    redirect: string | undefined,
    ip: string,
    pick: (holder: EndUser | undefined, email: string) => Promise<{ user: EndUser; to: string; newEmail?: string; guard?: (tx: Db, now: EndUser) => Promise<boolean> | boolean } | null>,
  ): Promise<typeof OK> {
    const email = checkEmail(rawEmail, purpose === 'email_change' ? 'new_email' : 'email');
    const base = await this.settings.redirectBase(projectId, redirect);
    const db = await this.engine.callers(projectId);
    await this.limit.hit(db, email, ip);
    const target = await pick(await this.users.findByEmail(db, email), email);
    if (!target) return OK;
    // The token is issued after the response too, so a registered address costs the request no
    // more work than an unknown one. What the request saw may have changed by then: the token is
    // issued (under the user's row lock) only if the user still exists at the address the request
    // found, so a link never goes to an address the account has left, and if the flow's own guard
    // (the session that asked still exists; the address is still unverified) says so.
    const values = purpose === 'email_change' ? { new_email: target.to } : { email: target.to };
    this.queue(projectId, purpose, target.to, async () => {
      const token = await this.tokens.issue(db, target.user.id, purpose, target.newEmail ?? null, async (tx, now) =>
        now.email === target.user.email && (target.guard === undefined || (await target.guard(tx, now))),
      );
      return token === null ? null : linkWithToken(base, token);
    }, values);
    return OK;
  }

  private queue(projectId: string, purpose: Purpose, to: string, link: () => Promise<string | null>, values: { email?: string; new_email?: string }): void {
    const job = this.deliver(projectId, purpose, to, link, values).catch((err: unknown) => {
      this.log.warn({ project_id: projectId, purpose, reason: err instanceof DeliveryError ? err.reason : 'internal_error' }, 'email not delivered');
    });
    this.pending.add(job);
    void job.finally(() => this.pending.delete(job));
  }

  private async deliver(projectId: string, purpose: Purpose, to: string, makeLink: () => Promise<string | null>, values: { email?: string; new_email?: string }): Promise<void> {
    const link = await makeLink();
    if (link === null) return;
    const pm = await this.config.mailerFor(projectId);
    if (!pm) return; // no provider: the token exists, nothing is sent (SPEC 4.6 rule 3)
    const rendered = await this.templates.renderFor(projectId, purpose, { link, project_name: await this.projectName(projectId), ...values });
    await pm.mailer.send({ from: pm.from, to, subject: rendered.subject, html: rendered.html, text: rendered.text });
  }

  // ---- consume endpoints

  /**
   * Uses up a token inside `tx`, or throws 400. The token's user row is locked first (the lock
   * order of end-users.ts); the DELETE ... RETURNING still decides, so of concurrent uses exactly
   * one succeeds.
   */
  private async consume(tx: Db, token: string, purpose: Purpose): Promise<{ userId: number; newEmail: string | null }> {
    const holder = await this.tokens.holder(tx, token, purpose);
    if (holder === null) throw invalidToken();
    await this.users.lock(tx, holder);
    const t = await this.tokens.consume(tx, token, purpose);
    if (!t) throw invalidToken();
    return t;
  }

  /** A session; on an unverified account the first verification (see EndUserService.applyProof). */
  async consumeMagicLink(projectId: string, token: string): Promise<EndUserSession> {
    const db = await this.engine.callers(projectId);
    return db.tx(async (tx) => {
      const t = await this.consume(tx, token, 'magic_link');
      return this.users.startSession(tx, await this.users.applyProof(tx, t.userId, { kind: 'magic_link' }));
    });
  }

  /**
   * A password-reset link used to sign in (supabase-js verifyOtp type 'recovery'): a session, like
   * a magic link, since the link proves the address the same way; the new password is then set
   * through that session (EndUserService.changePassword).
   */
  async consumeRecoveryLink(projectId: string, token: string): Promise<EndUserSession> {
    const db = await this.engine.callers(projectId);
    return db.tx(async (tx) => {
      const t = await this.consume(tx, token, 'password_reset');
      return this.users.startSession(tx, await this.users.applyProof(tx, t.userId, { kind: 'magic_link' }));
    });
  }

  /**
   * Sets the new password and ends every session of the user. The address is not marked verified
   * (SPEC 2: only verify/confirm and email-change/confirm set it; CONTRACT adds the magic link).
   */
  async resetPassword(projectId: string, input: { token: string; password: string }): Promise<{ user: EndUser }> {
    checkPassword(input.password);
    const db = await this.engine.callers(projectId);
    // a cheap look first, so that garbage tokens cost no argon2 work; consuming stays atomic below
    if ((await this.tokens.holder(db, input.token, 'password_reset')) === null) throw invalidToken();
    const hash = await this.hasher.hash(input.password, projectId);
    return db.tx(async (tx) => {
      const t = await this.consume(tx, input.token, 'password_reset');
      return { user: await this.users.applyProof(tx, t.userId, { kind: 'password_reset', passwordHash: hash }) };
    });
  }

  /**
   * Marks the address verified. As the first verification it keeps the password only where the
   * project requires confirmation (see EndUserService.applyProof).
   */
  async confirmVerification(projectId: string, token: string): Promise<{ user: EndUser }> {
    const db = await this.engine.callers(projectId);
    const confirmsPassword = await this.config.requiresConfirmation(projectId);
    return db.tx(async (tx) => {
      const t = await this.consume(tx, token, 'email_verification');
      return { user: await this.users.applyProof(tx, t.userId, { kind: 'verification', confirmsPassword }) };
    });
  }

  /**
   * Applies the change (409 if another user took the address meanwhile; the token then stays
   * usable). On an unverified account it is the first verification, as in confirmVerification.
   */
  async confirmEmailChange(projectId: string, token: string): Promise<{ user: EndUser }> {
    const db = await this.engine.callers(projectId);
    const confirmsPassword = await this.config.requiresConfirmation(projectId);
    return db.tx(async (tx) => {
      const t = await this.consume(tx, token, 'email_change');
      if (t.newEmail === null) throw invalidToken();
      return { user: await this.users.applyProof(tx, t.userId, { kind: 'email_change', email: t.newEmail, confirmsPassword }) };
    });
  }
}
